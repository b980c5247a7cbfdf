package views

import (
	"net/url"
	"time"

	"github.com/a-h/templ"

	"github.com/countersign/countersign/models/outbox"
)

// PersonChannelsView is the person's channels besides Web Push, on Devices:
// each kind a person may choose (email, Slack), and a refusal at the form
// of the kind it is about.
type PersonChannelsView struct {
	Offers     []PersonChannelOffer
	Error      string // a refusal, shown at its field (ErrorField) in the form of ErrorKind
	ErrorField string
	ErrorKind  string
	Typed      string // the address the refused form held, filled in again
}

// PersonChannelOffer is one kind of channel a person may turn on.
type PersonChannelOffer struct {
	Kind       string // email, slack
	Configured bool   // the service sends it; else an admin sets it up first
	On         bool
	Address    string // their address there (a Slack member id, or "" to be found by email)
}

// address is what the offer's field holds: the refused address typed, or
// the one stored.
func (v PersonChannelsView) address(o PersonChannelOffer) string {
	if v.ErrorKind == o.Kind && v.Error != "" {
		return v.Typed
	}
	return o.Address
}

// errorFor is the refusal about kind's field, shown there.
func (v PersonChannelsView) errorFor(kind, field string) string {
	if v.ErrorKind != kind {
		return ""
	}
	return errorAt(v.Error, v.ErrorField, field)
}

// invalidFor is the aria-invalid of kind's field.
func (v PersonChannelsView) invalidFor(kind, field string) string {
	if v.errorFor(kind, field) != "" {
		return "true"
	}
	return "false"
}

// looseErrorFor is the refusal about kind that is about none of its fields.
func (v PersonChannelsView) looseErrorFor(kind string) string {
	if v.ErrorKind != kind {
		return ""
	}
	return looseError(v.Error, v.ErrorField, "address")
}

// personChannelTitle names a channel a person turns on.
func personChannelTitle(kind string) string {
	if kind == outbox.ChannelSlack {
		return "Slack direct messages"
	}
	return ChannelName(kind)
}

// personChannelWords name a channel a person turns on, within a sentence.
func personChannelWords(kind string) string {
	if kind == outbox.ChannelSlack {
		return "Slack direct messages"
	}
	return kind
}

// personChannelLabel labels the address field of a person's channel.
func personChannelLabel(kind string) string {
	if kind == outbox.ChannelSlack {
		return "Your Slack member id (optional)"
	}
	return "Your email address"
}

// ChannelName is how the pages name a kind of channel.
func ChannelName(kind string) string {
	switch kind {
	case outbox.ChannelEmail:
		return "Email"
	case outbox.ChannelSlack:
		return "Slack"
	case outbox.ChannelTeams:
		return "Microsoft Teams"
	case outbox.ChannelNtfy:
		return "ntfy"
	case outbox.ChannelWebhook:
		return "Webhook"
	}
	return kind
}

// ChannelSetting is the setting that sets a kind of channel up on the
// service, for the kinds that need one.
func ChannelSetting(kind string) string {
	switch kind {
	case outbox.ChannelEmail:
		return "COUNTERSIGN_SMTP_URL"
	case outbox.ChannelSlack:
		return "COUNTERSIGN_SLACK_BOT_TOKEN"
	}
	return ""
}

// personChannelPath is where a form of the person's channel of kind posts.
func personChannelPath(kind, action string) templ.SafeURL {
	p := "/devices/channels/" + url.PathEscape(kind)
	if action != "" {
		p += "/" + action
	}
	return templ.SafeURL(p)
}

// SharedChannelsView is Admin → Channels: the account's shared channels,
// the forms that add or change one of each kind, and the dead letters.
type SharedChannelsView struct {
	Channels []SharedChannelRow
	Dead     []DeadMessageRow
	Slack    bool // the service has a Slack bot token: Slack channels are offered
	// Form fills the form of its kind again: a refused one, or ?edit=NAME.
	Form       SharedChannelForm
	Error      string // a refusal, shown at its field (ErrorField) in the form of ErrorKind, or above
	ErrorField string
	ErrorKind  string
	// NewSecret is the signing secret just made for the webhook NewSecretFor,
	// shown this once.
	NewSecretFor string
	NewSecret    string
}

// SharedChannelRow is one shared channel, in words: never its secret.
type SharedChannelRow struct {
	Name      string
	Kind      string
	PostsTo   string // what it posts to, without any secret part
	Secret    string // what of it is secret, "secret set (…)", or how it signs in
	EveryAsk  bool
	UpdatedAt time.Time
}

// SharedChannelForm is what the form of a kind holds besides its secrets,
// which are never filled in again.
type SharedChannelForm struct {
	Kind     string
	Name     string
	Channel  string // Slack
	Server   string // ntfy
	Topic    string // ntfy
	EveryAsk bool
}

// DeadMessageRow is one message given up for good.
type DeadMessageRow struct {
	At        time.Time
	To        string // the shared channel's name, or the person and their channel
	Kind      string
	Event     string
	Attempts  int
	LastError string
}

// formOf is the form of kind: the one view carries, when it is of kind.
func (v SharedChannelsView) formOf(kind string) SharedChannelForm {
	if v.Form.Kind == kind {
		return v.Form
	}
	f := SharedChannelForm{Kind: kind}
	if kind == outbox.ChannelNtfy {
		f.Server = "https://ntfy.sh"
	}
	return f
}

// errorFor is the refusal about kind's field, shown there.
func (v SharedChannelsView) errorFor(kind, field string) string {
	if v.ErrorKind != kind {
		return ""
	}
	return errorAt(v.Error, v.ErrorField, field)
}

// invalidFor is the aria-invalid of kind's field.
func (v SharedChannelsView) invalidFor(kind, field string) string {
	if v.errorFor(kind, field) != "" {
		return "true"
	}
	return "false"
}

// sharedFormFields are the fields of the shared channel forms; a refusal
// about none of them shows above the forms.
var sharedFormFields = []string{"name", "channel", "url", "server", "topic", "token"}

// looseError is the refusal about no field of the form it came from.
func (v SharedChannelsView) looseError() string {
	if v.ErrorKind == "" {
		return v.Error
	}
	return looseError(v.Error, v.ErrorField, sharedFormFields...)
}

// sharedChannelPath is where a shared channel's form posts.
func sharedChannelPath(name, action string) templ.SafeURL {
	return templ.SafeURL("/admin/channels/" + url.PathEscape(name) + "/" + action)
}

// sharedEditPath fills the form of kind with the channel name, for a change.
func sharedEditPath(name, kind string) templ.SafeURL {
	return templ.SafeURL("/admin/channels?edit=" + url.QueryEscape(name) + "#channel-form-" + kind)
}

// sharedKinds are the kinds of shared channel, each with its form.
var sharedKinds = outbox.SharedKinds

// maxMessageAttempts is how many tries a message gets before it is dead.
const maxMessageAttempts = outbox.MaxMessageAttempts

// sharedFormTitle heads the form of a kind of shared channel.
func sharedFormTitle(kind string) string {
	switch kind {
	case outbox.ChannelSlack:
		return "A Slack channel"
	case outbox.ChannelTeams:
		return "A Microsoft Teams channel"
	case outbox.ChannelNtfy:
		return "An ntfy topic"
	case outbox.ChannelWebhook:
		return "A webhook"
	}
	return kind
}

// sharedFormHelp says what a kind of shared channel gets.
func sharedFormHelp(kind string) string {
	switch kind {
	case outbox.ChannelSlack:
		return "Posted by the service's Slack app: invite it to the channel first (/invite @your-app). When the ask ends, its message says how."
	case outbox.ChannelTeams:
		return "An Adaptive Card through the channel's Workflows webhook, with one button that opens the ask."
	case outbox.ChannelNtfy:
		return "A notification on an ntfy topic, on ntfy.sh or your own server; a tap opens the ask. ntfy has no end-to-end encryption: anyone who knows an open topic reads it."
	case outbox.ChannelWebhook:
		return "A signed JSON event (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature) for PagerDuty, Opsgenie or your own receiver. The service makes the signing secret and shows it once."
	}
	return ""
}

// sharedNamePlaceholder suggests a name for a channel of kind.
func sharedNamePlaceholder(kind string) string {
	switch kind {
	case outbox.ChannelSlack, outbox.ChannelTeams:
		return "#oncall"
	case outbox.ChannelNtfy:
		return "ops-phones"
	}
	return "pagerduty"
}

// sharedSaveWords are the words of a form's button.
func sharedSaveWords(kind string) string {
	switch kind {
	case outbox.ChannelNtfy:
		return "Save the ntfy topic"
	case outbox.ChannelWebhook:
		return "Save the webhook"
	}
	return "Save the " + ChannelName(kind) + " channel"
}
