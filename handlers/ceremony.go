package handlers

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/passkey"
)

// ceremonyReply is what a browser posts to finish a passkey ceremony.
type ceremonyReply struct {
	Ceremony   string          `json:"ceremony"`
	Credential json.RawMessage `json:"credential"`
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
		return models.Invalid(field, "one line of at most 64 characters")
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
