package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/views"
)

// WorkItemShow is one work item: its history, including which approved
// request moved it, and the forms to rename and move it.
func (h *Handlers) WorkItemShow(c echo.Context) error {
	return h.workItemPage(c, http.StatusOK, "")
}

// workItemPage renders the item of the :id parameter with status and,
// after a refused action, its refusal.
func (h *Handlers) workItemPage(c echo.Context, status int, refusal string) error {
	ctx := c.Request().Context()
	v := viewerOf(c)
	it, err := h.store.GetWorkItem(ctx, v.account.ID, c.Param("id"))
	if err != nil {
		return err
	}
	board, err := h.store.WorkBoard(ctx, v.account.ID, "")
	if err != nil {
		return err
	}
	history, err := h.store.WorkItemHistory(ctx, v.account.ID, it.ID)
	if err != nil {
		return err
	}
	page := views.WorkItemPage{Item: workItemView(it), Error: refusal, Now: h.store.Now()}
	for _, col := range board.Columns {
		page.Columns = append(page.Columns, views.WorkColumn{Key: col.Key, Name: col.Name})
	}
	name := board.ColumnName
	for _, e := range history {
		w := views.WorkEvent{At: e.At, ActorKind: e.ActorKind, Actor: e.Actor, Action: e.Action, ApprovalID: e.ApprovalID, Note: e.Note}
		if e.FromColumn != "" {
			w.From = name(e.FromColumn)
		}
		if e.ToColumn != "" {
			w.To = name(e.ToColumn)
		}
		page.History = append(page.History, w)
	}
	return h.render(c, status, views.WorkItemShow(h.page(c, it.Title, "work"), page))
}
