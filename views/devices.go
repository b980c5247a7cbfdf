package views

import (
	"net/url"
	"time"

	"github.com/a-h/templ"
)

// DevicesView is the signed-in person's passkeys.
type DevicesView struct {
	Keys  []DeviceRow
	Error string // a refusal to show above the list
}

// DeviceRow is one passkey.
type DeviceRow struct {
	ID         string // the credential id, base64url
	Name       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	BackedUp   bool // synced by the platform (iCloud Keychain, Google Password Manager…)
}

// devicePath is where a passkey's form posts.
func devicePath(id, action string) templ.SafeURL {
	return templ.SafeURL("/devices/" + url.PathEscape(id) + "/" + action)
}
