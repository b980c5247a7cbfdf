package handlers

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// WorkItemRename sets an item's title and description.
func (h *Handlers) WorkItemRename(c echo.Context) error {
	v := viewerOf(c)
	err := h.store.RenameItem(c.Request().Context(), v.account.ID, c.Param("id"), c.FormValue("title"),
		c.FormValue("description"), asks.ActorPerson, v.member.Subject)
	if msg, status, ok := refusalOf(err); ok && core.CodeOf(err) != core.NotFound {
		return h.workItemPage(c, status, msg)
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/work/items/"+url.PathEscape(c.Param("id")), "work-item-renamed")
}
