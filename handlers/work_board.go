package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/work"
	"github.com/countersign/countersign/views"
)

// WorkBoard is the account's work board: its columns and items, for every
// member; owners and admins also manage the columns there.
func (h *Handlers) WorkBoard(c echo.Context) error {
	return h.workBoardPage(c, http.StatusOK, "")
}

// workBoardPage renders the board with status and, after a refused action, its refusal.
func (h *Handlers) workBoardPage(c echo.Context, status int, refusal string) error {
	v := viewerOf(c)
	board, err := h.store.WorkBoard(c.Request().Context(), v.account.ID, "")
	if err != nil {
		return err
	}
	view := views.WorkBoard{Columns: boardColumns(board), CanManage: v.isAdmin(), Error: refusal}
	return h.render(c, status, views.Work(h.page(c, "Work board", "work"), view))
}

// boardColumns groups the board's items under their columns, in order.
func boardColumns(b *work.Board) []views.WorkColumn {
	cols := make([]views.WorkColumn, len(b.Columns))
	at := make(map[string]int, len(b.Columns))
	for i, c := range b.Columns {
		cols[i] = views.WorkColumn{Key: c.Key, Name: c.Name}
		at[c.Key] = i
	}
	for _, it := range b.Items {
		if i, ok := at[it.ColumnKey]; ok {
			cols[i].Items = append(cols[i].Items, workItemView(&it))
		}
	}
	return cols
}

func workItemView(it *work.WorkItem) views.WorkItem {
	return views.WorkItem{ID: it.ID, Title: it.Title, Description: it.Description, Column: it.ColumnKey}
}

// workRefused re-renders the board with a refusal of the store, or passes
// any other error on to the error handler.
func (h *Handlers) workRefused(c echo.Context, err error) error {
	if msg, status, ok := refusalOf(err); ok {
		return h.workBoardPage(c, status, msg)
	}
	return err
}
