package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/views"
)

// A push for an ask carries a one-time link, /link/ASK/TOKEN (see
// models.PushLink). Opened signed out, it shows that ask alone, and the
// person answers it with one passkey prompt: the decision's own assertion
// says who decides. Opened in a session that can see the ask, it is the ask
// page, and the link stays unused.

// pushLinkCookie names the HttpOnly cookie that holds, for one ask, the
// secret its opened push link was swapped for.
func pushLinkCookie(approvalID string) string { return "cs_link_" + approvalID }

// pushReceiptCookie names the cookie that keeps, for the done page alone,
// the secret of the push link an answer was just signed through.
func pushReceiptCookie(approvalID string) string { return "cs_receipt_" + approvalID }

// pushLinkPath is the ask under its push link.
func pushLinkPath(approvalID string) string { return "/link/" + url.PathEscape(approvalID) }

// askSignIn is the sign-in page that lands on the ask afterwards.
func askSignIn(approvalID string) string {
	return "/signin?next=" + url.QueryEscape("/approvals/"+url.PathEscape(approvalID))
}

// PushLinkOpen opens a push's link: in a session whose account holds the ask,
// the ask page; otherwise the link's token is swapped, once, for a secret
// kept in this browser's cookie, and the ask opens under the link.
func (h *Handlers) PushLinkOpen(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if !outbox.ValidPushLinkApproval(id) {
		return h.pushLinkRefused(c, id, core.Refuse(core.NotFound, "link", "this link opens nothing: it is not a link to an ask"))
	}
	if v := viewerOf(c); v != nil {
		if _, err := h.store.GetApproval(ctx, v.account.ID, id); err == nil {
			return c.Redirect(http.StatusSeeOther, "/approvals/"+url.PathEscape(id))
		}
	}
	secret, link, err := h.store.OpenPushLink(ctx, id, c.Param("token"))
	if err != nil {
		return h.pushLinkRefused(c, id, err)
	}
	c.SetCookie(&http.Cookie{Name: pushLinkCookie(id), Value: secret, Path: "/", HttpOnly: true, Secure: h.secure,
		// Lax: the tap on a notification may open the link as a navigation
		// from outside the site, and the redirect that follows must carry it.
		SameSite: http.SameSiteLaxMode, MaxAge: max(int(time.Until(link.ExpiresAt).Seconds()), 1)})
	return c.Redirect(http.StatusSeeOther, pushLinkPath(id))
}

// pushLinkOf reads the live push link this browser holds for the ask id.
func (h *Handlers) pushLinkOf(c echo.Context, id string) (*outbox.PushLink, error) {
	ck, err := c.Cookie(pushLinkCookie(id))
	if !outbox.ValidPushLinkApproval(id) || err != nil || ck.Value == "" {
		return nil, core.Refuse(core.NotFound, "link", "this browser holds no link to this ask: open it from its notification, or sign in")
	}
	return h.store.PushLinkFor(c.Request().Context(), id, ck.Value)
}

// PushLinkShow is the ask under the push link this browser holds: its page,
// read-only but for the answer, which the person's passkey signs.
func (h *Handlers) PushLinkShow(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	l, err := h.pushLinkOf(c, id)
	if err != nil {
		return h.pushLinkRefused(c, id, err)
	}
	m, err := h.store.MemberByID(ctx, l.AccountID, l.PersonID)
	if core.CodeOf(err) == core.NotFound {
		return h.pushLinkRefused(c, id, core.Refuse(core.PermissionDenied, "link", "the person this link was sent to is no longer a member of the ask's account"))
	}
	if err != nil {
		return err
	}
	a, err := h.store.GetApproval(ctx, l.AccountID, id)
	if err != nil {
		return err
	}
	view, err := h.askPage(ctx, a, m)
	if err != nil {
		return err
	}
	view.ViaLink = pushLinkPath(id)
	p := h.page(c, a.Title, "")
	p.Flash = views.PushLinkOpened
	return h.render(c, http.StatusOK, views.Approval(p, view))
}

// PushLinkChallenge answers the WebAuthn options of one decision on the ask
// on the authority of the push link this browser holds.
func (h *Handlers) PushLinkChallenge(c echo.Context) error {
	var req challengeRequest
	if err := readJSON(c, &req, maxWebBody); err != nil {
		return err
	}
	l, err := h.pushLinkOf(c, c.Param("id"))
	if err != nil {
		return err
	}
	id, options, err := h.decisions.BeginWithLink(c.Request().Context(), l, c.Param("id"), req.choice())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ceremony": id, "options": options})
}

// PushLinkDecide records the decision signed under the push link, which it
// spends, and forgets the link in this browser.
func (h *Handlers) PushLinkDecide(c echo.Context) error {
	var reply ceremonyReply
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return err
	}
	id := c.Param("id")
	l, err := h.pushLinkOf(c, id)
	if err != nil {
		return err
	}
	decided, err := h.decisions.CompleteWithLink(c.Request().Context(), l, id, reply.Ceremony, reply.Credential)
	if err != nil {
		return err
	}
	// The browser forgets the spent link, but keeps its secret a while for
	// the done page alone (the cookie's path), which reads the answer's
	// receipt with it.
	if ck, err := c.Cookie(pushLinkCookie(id)); err == nil {
		c.SetCookie(&http.Cookie{Name: pushReceiptCookie(id), Value: ck.Value, Path: pushLinkPath(id) + "/done",
			MaxAge: int(outbox.PushLinkReceiptLife.Seconds()), HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteLaxMode})
	}
	c.SetCookie(&http.Cookie{Name: pushLinkCookie(id), Path: "/", MaxAge: -1, HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteLaxMode})
	return c.JSON(http.StatusOK, map[string]string{"status": string(decided.Status), "redirect": pushLinkPath(id) + "/done"})
}

// PushLinkDone shows the browser that just signed an answer through a push
// link the answer's receipt, read with the spent link's secret it still
// holds for a while; to anyone else it says only that an answer was signed.
func (h *Handlers) PushLinkDone(c echo.Context) error {
	ctx, id := c.Request().Context(), c.Param("id")
	if !outbox.ValidPushLinkApproval(id) {
		id = ""
	}
	var receipt *views.Receipt
	if ck, err := c.Cookie(pushReceiptCookie(id)); id != "" && err == nil && ck.Value != "" {
		a, l, err := h.store.SpentPushLinkReceipt(ctx, id, ck.Value)
		if err != nil && core.CodeOf(err) != core.NotFound {
			return err
		}
		if err == nil {
			m, err := h.store.MemberByID(ctx, l.AccountID, l.PersonID)
			if err != nil && core.CodeOf(err) != core.NotFound {
				return err
			}
			if m != nil {
				r, ok, err := h.receiptOf(ctx, a, m)
				if err != nil {
					return err
				}
				if ok {
					r.SignIn = askSignIn(id)
					receipt = &r
				}
			}
		}
	}
	return h.render(c, http.StatusOK, views.PushLinkDone(h.page(c, "Answer signed", ""), askSignIn(id), receipt))
}

// pushLinkRefused answers a page that says why the link opens nothing, with
// the refusal's status (404, 403 or 409), or the refusal itself to a script.
func (h *Handlers) pushLinkRefused(c echo.Context, id string, err error) error {
	var refusal *core.Error
	if wantsJSON(c) || !errors.As(err, &refusal) {
		return err
	}
	if !outbox.ValidPushLinkApproval(id) {
		id = ""
	}
	return h.render(c, statusOf[refusal.Code], views.PushLinkRefused(h.page(c, "Link refused", ""), refusal.Msg, askSignIn(id)))
}

// askPagePath is an ask's page, as a sign-in's next names it.
var askPagePath = regexp.MustCompile(`^/approvals/([a-z0-9_]{1,64})$`)

// signInAsk is what the sign-in page says of the ask next leads to: that
// there is one, and its title only when this browser holds a live push link
// to it.
func (h *Handlers) signInAsk(c echo.Context, next string) views.SignInAsk {
	m := askPagePath.FindStringSubmatch(next)
	if m == nil {
		return views.SignInAsk{}
	}
	out := views.SignInAsk{Opened: true}
	if l, err := h.pushLinkOf(c, m[1]); err == nil {
		if a, err := h.store.GetApproval(c.Request().Context(), l.AccountID, m[1]); err == nil {
			out.Title = a.Title
		}
	}
	return out
}
