package views

import (
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
)

// DevicesView is the signed-in person's passkeys and push subscriptions.
type DevicesView struct {
	Keys []DeviceRow
	Push PushView
	// Clients are the OAuth clients the person connected.
	Clients []ConnectedClientRow
	Error   string // a refusal to show above the list
	Away    AwayView
	// Channels are the person's channels besides Web Push: email, Slack.
	Channels PersonChannelsView
}

// AwayView is the person's away status, and whom they may name as delegate.
type AwayView struct {
	Until    *time.Time // set while they are away
	Delegate string     // their delegate's subject, while away
	Members  []AwayDelegate
	Suggest  string // the form's default time, datetime-local in UTC
}

// AwayDelegate is a member the person may name as their delegate.
type AwayDelegate struct {
	Subject string
	Role    string
}

// DeviceRow is one passkey.
type DeviceRow struct {
	ID          string // the credential id, base64url
	Name        string
	CreatedAt   time.Time
	LastUsedAt  *time.Time
	BackedUp    bool   // synced by the platform (iCloud Keychain, Google Password Manager…)
	AddedBy     string // the credential id of the passkey that authorised this one; "" for a first passkey
	AddedByName string // its name
}

// DeviceLinkView is a one-time device link opened on a new device.
type DeviceLinkView struct {
	Token   string
	Subject string
}

// PushView is the Notifications card: the key a browser subscribes with and
// the person's subscribed devices.
type PushView struct {
	PublicKey string // the VAPID public key, base64url: the applicationServerKey
	Devices   []PushDeviceRow
}

// PushDeviceRow is one browser with notifications on.
type PushDeviceRow struct {
	ID             string
	EndpointSHA256 string // hex; the page script finds "this browser" by it without the page showing endpoints
	UserAgent      string
	CreatedAt      time.Time
	LastSuccessAt  *time.Time
	Failures       int
}

// devicePath is where a passkey's form posts.
func devicePath(id, action string) templ.SafeURL {
	return templ.SafeURL("/devices/" + url.PathEscape(id) + "/" + action)
}

// browserName names a browser and its system from a User-Agent, roughly,
// as "Safari on iPhone"; the full string stays in a tooltip.
func browserName(ua string) string {
	has := func(s string) bool { return strings.Contains(ua, s) }
	system := ""
	switch {
	case has("iPhone"):
		system = "iPhone"
	case has("iPad"):
		system = "iPad"
	case has("Android"):
		system = "Android"
	case has("Mac OS X") || has("Macintosh"):
		system = "macOS"
	case has("Windows"):
		system = "Windows"
	case has("CrOS"):
		system = "ChromeOS"
	case has("Linux"):
		system = "Linux"
	}
	name := ""
	switch {
	case has("Edg/") || has("EdgiOS/") || has("EdgA/"):
		name = "Edge"
	case has("Firefox/") || has("FxiOS/"):
		name = "Firefox"
	case has("Chrome/") || has("CriOS/") || has("Chromium/"):
		name = "Chrome"
	case has("Safari/"):
		name = "Safari"
	}
	switch {
	case name != "" && system != "":
		return name + " on " + system
	case name != "":
		return name
	case system != "":
		return system
	}
	return "Unknown browser"
}
