package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/passkey"
)

// ceremonyReply is what a browser posts to finish a passkey ceremony.
type ceremonyReply struct {
	Ceremony   string          `json:"ceremony"`
	Credential json.RawMessage `json:"credential"`
}

// beginCeremony keeps a passkey ceremony's state server-side, bound to what
// it was begun for (a person's id, or the hash of an invite's or a link's
// token), and answers the browser the ceremony's id and its options.
func (h *Handlers) beginCeremony(c echo.Context, kind, boundTo string, options passkey.Options, state any) error {
	raw, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("%s ceremony: %w", kind, err)
	}
	id, err := h.store.SaveCeremony(c.Request().Context(), kind, boundTo, raw)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"ceremony": id, "options": options})
}

// sessionBound is the state of a ceremony that only the web session that
// began it may finish.
type sessionBound interface{ beganIn() string }

// takeSignedReply reads the reply to a passkey-confirmed action of kind:
// JSON with a ceremony and a credential (else the refusal unsigned says why),
// the ceremony taken once into state, begun by this person in this session.
func (h *Handlers) takeSignedReply(c echo.Context, kind string, state sessionBound, unsigned func() error) (ceremonyReply, error) {
	v := viewerOf(c)
	var reply ceremonyReply
	if !wantsJSON(c) {
		return reply, unsigned()
	}
	if err := readJSON(c, &reply, maxWebBody); err != nil {
		return reply, err
	}
	if reply.Ceremony == "" || len(reply.Credential) == 0 {
		return reply, unsigned()
	}
	if err := h.takeCeremony(c, reply.Ceremony, kind, v.member.ID, state); err != nil {
		return reply, err
	}
	if state.beganIn() != core.HashToken(v.token) {
		return reply, core.Refuse(core.PermissionDenied, "ceremony", "this passkey prompt was made in another session; start again")
	}
	return reply, nil
}

// takeCeremony reads, once, the state of the ceremony id of kind into state;
// one begun for something other than boundTo ("" for anything) is refused.
func (h *Handlers) takeCeremony(c echo.Context, id, kind, boundTo string, state any) error {
	raw, bound, err := h.store.TakeCeremony(c.Request().Context(), id, kind)
	if err != nil {
		return err
	}
	if boundTo != "" && bound != boundTo {
		return core.Refuse(core.PermissionDenied, "ceremony", "this passkey prompt was made for another person, invite or link; start again")
	}
	if err := json.Unmarshal(raw, state); err != nil {
		return fmt.Errorf("%s ceremony: %w", kind, err)
	}
	return nil
}

// signInFirstAccount starts a session for the person in the account they
// joined first.
func (h *Handlers) signInFirstAccount(c echo.Context, personID string) error {
	accounts, err := h.store.Memberships(c.Request().Context(), personID)
	if err != nil {
		return err
	}
	if len(accounts) == 0 {
		return core.Refuse(core.PermissionDenied, "", "this passkey's person is no longer a member of any account")
	}
	return h.startSession(c, personID, accounts[0].AccountID)
}

// user loads a person with their live passkeys, as WebAuthn sees them.
func (h *Handlers) user(ctx context.Context, personID string) (*passkey.User, error) {
	p, err := h.store.PersonByID(ctx, personID)
	if err != nil {
		return nil, err
	}
	keys, err := h.store.DeviceKeys(ctx, personID)
	if err != nil {
		return nil, err
	}
	return &passkey.User{ID: p.ID, Subject: p.Subject, DisplayName: p.DisplayName, Keys: keys}, nil
}

// checkName refuses a name that is not one line of at most 64 characters.
func checkName(field, s string) error {
	if len([]rune(s)) > 64 || strings.ContainsAny(s, "\r\n\t") {
		return core.Invalid(field, "one line of at most 64 characters")
	}
	return nil
}

// deviceName is the name given, or one guessed from the browser.
func deviceName(given string, c echo.Context) string {
	if s := strings.TrimSpace(given); s != "" {
		return s
	}
	ua := c.Request().UserAgent()
	for _, d := range []string{"iPhone", "iPad", "Macintosh", "Android", "Windows", "Linux"} {
		if strings.Contains(ua, d) {
			if d == "Macintosh" {
				return "Mac"
			}
			return d
		}
	}
	return "Passkey"
}
