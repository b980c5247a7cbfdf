package handlers

import (
	"net/http"

	"github.com/countersign/countersign/ask"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/views"
)

// historySize is how many asks one page of the history shows.
const historySize = 50

// History lists the account's asks, newest first, filtered by status and
// kind, one page at a time.
func (h *Handlers) History(c echo.Context) error {
	v := viewerOf(c)
	view := views.HistoryView{Now: h.store.Now(), Status: c.QueryParam("status"), Kind: c.QueryParam("kind"),
		Kinds: append(append([]string{}, ask.Kinds...), ask.KindAutoApprove, ask.KindAuthorization)}
	for _, s := range asks.AllStatuses {
		view.Statuses = append(view.Statuses, string(s))
	}
	list, next, err := h.store.ListApprovals(c.Request().Context(), v.account.ID, asks.ListFilter{
		Status: view.Status, Kind: view.Kind, PageSize: historySize, PageToken: c.QueryParam("page"),
	})
	status := http.StatusOK
	if err != nil {
		var ok bool
		if view.Error, status, ok = refusalOf(err); !ok {
			return err
		}
	}
	view.Asks, view.Next = askRows(list), next
	return h.render(c, status, views.History(h.page(c, "History", "history"), view))
}
