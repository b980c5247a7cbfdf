package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/views"
)

// deadShown is how many of the newest dead messages Admin → Channels lists.
const deadShown = 50

// AdminChannels lists the account's shared channels and its dead letters;
// ?edit=NAME fills the form of that channel's kind, for a change.
func (h *Handlers) AdminChannels(c echo.Context) error {
	var view views.SharedChannelsView
	if name := c.QueryParam("edit"); name != "" {
		ch, err := h.store.SharedChannelByName(c.Request().Context(), viewerOf(c).account.ID, name)
		if err != nil && core.CodeOf(err) != core.NotFound {
			return err
		}
		if ch != nil {
			view.Form = sharedFormOf(ch)
		}
	}
	return h.channelsPage(c, http.StatusOK, view)
}

// channelsPage renders Admin → Channels over view, which may carry a
// refusal, a form to fill again or a webhook's new signing secret.
func (h *Handlers) channelsPage(c echo.Context, status int, view views.SharedChannelsView) error {
	ctx, accountID := c.Request().Context(), viewerOf(c).account.ID
	shared, err := h.store.SharedChannels(ctx, accountID)
	if err != nil {
		return err
	}
	for _, ch := range shared {
		view.Channels = append(view.Channels, sharedChannelRow(ch))
	}
	dead, err := h.store.DeadMessages(ctx, accountID, deadShown)
	if err != nil {
		return err
	}
	members, err := h.store.Members(ctx, accountID)
	if err != nil {
		return err
	}
	subjects := map[string]string{}
	for _, m := range members {
		subjects[m.ID] = m.Subject
	}
	for _, m := range dead {
		row := views.DeadMessageRow{At: m.CreatedAt, To: m.Channel, Kind: m.Kind, Event: m.Event, Attempts: m.Attempts, LastError: withoutURLPaths(m.LastError)}
		if m.DoneAt != nil {
			row.At = *m.DoneAt
		}
		if !m.Shared() {
			who := subjects[m.PersonID]
			if who == "" {
				who = "a former member"
			}
			row.To = who + "'s " + strings.ToLower(views.ChannelName(m.Kind))
		}
		view.Dead = append(view.Dead, row)
	}
	view.Slack = h.channels.Slack
	return h.render(c, status, views.AdminChannels(h.page(c, "Channels", "admin"), view))
}

// AdminChannelSave adds a shared channel of the form's kind, or changes the
// one of its name. A new webhook gets a signing secret, shown this once.
func (h *Handlers) AdminChannelSave(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return h.channelsPage(c, http.StatusBadRequest, views.SharedChannelsView{Error: "the form could not be read"})
	}
	f := views.SharedChannelForm{Kind: form.Get("kind"), Name: strings.TrimSpace(form.Get("name")), Channel: strings.TrimSpace(form.Get("channel")),
		Server: strings.TrimSpace(form.Get("server")), Topic: strings.TrimSpace(form.Get("topic")), EveryAsk: form.Get("every_ask") != ""}
	in := sharedSecrets{URL: strings.TrimSpace(form.Get("url")), Token: strings.TrimSpace(form.Get("token")), NewSigningSecret: form.Get("new_signing_secret") != ""}
	ctx, accountID := c.Request().Context(), viewerOf(c).account.ID
	ch, made, err := h.sharedChannelOf(ctx, accountID, f, in)
	if err == nil {
		err = h.store.SaveSharedChannel(ctx, ch)
	}
	if msg, status, ok := refusalOf(err); ok {
		kind := f.Kind
		if !slices.Contains(outbox.SharedKinds, kind) {
			kind = ""
		}
		return h.channelsPage(c, status, views.SharedChannelsView{Error: msg, ErrorField: core.FieldOf(err), ErrorKind: kind, Form: f})
	}
	if err != nil {
		return err
	}
	if made != "" {
		return h.channelsPage(c, http.StatusOK, views.SharedChannelsView{NewSecretFor: ch.Name, NewSecret: made})
	}
	return h.redirectWithFlash(c, "/admin/channels", "shared-channel-saved")
}

// AdminChannelRemove removes a shared channel; its messages still waiting go.
func (h *Handlers) AdminChannelRemove(c echo.Context) error {
	err := h.store.RemoveSharedChannel(c.Request().Context(), viewerOf(c).account.ID, channelParam(c))
	if msg, status, ok := refusalOf(err); ok {
		return h.channelsPage(c, status, views.SharedChannelsView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/admin/channels", "shared-channel-removed")
}

// AdminChannelTest queues a test message to a shared channel.
func (h *Handlers) AdminChannelTest(c echo.Context) error {
	err := h.store.QueueSharedTest(c.Request().Context(), viewerOf(c).account.ID, channelParam(c))
	if msg, status, ok := refusalOf(err); ok {
		return h.channelsPage(c, status, views.SharedChannelsView{Error: msg})
	}
	if err != nil {
		return err
	}
	return h.redirectWithFlash(c, "/admin/channels", "shared-channel-test")
}

// channelParam is the shared channel a path names ("#oncall" comes as %23oncall).
func channelParam(c echo.Context) string {
	name := c.Param("name")
	if u, err := url.PathUnescape(name); err == nil {
		return u
	}
	return name
}

// sharedSecrets are what the form of a shared channel takes that is kept
// secret: a URL that holds a key (Teams, a webhook), an access token (ntfy),
// and whether to make a webhook a new signing secret.
type sharedSecrets struct {
	URL              string
	Token            string
	NewSigningSecret bool
}

// hostSettings are the settings of a channel whose URL is secret: its host,
// to say where it posts.
type hostSettings struct {
	Host string `json:"host"`
}

var (
	slackChannel = regexp.MustCompile(`^(#[a-z0-9][a-z0-9._-]{0,79}|[CG][A-Z0-9]{2,20})$`)
	ntfyTopic    = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)
)

// sharedChannelOf makes the channel the form describes, and for a webhook
// the signing secret it made ("" when it kept the saved one). A secret left
// empty keeps the saved one of a channel of that name and kind.
func (h *Handlers) sharedChannelOf(ctx context.Context, accountID string, f views.SharedChannelForm, in sharedSecrets) (outbox.SharedChannel, string, error) {
	ch := outbox.SharedChannel{AccountID: accountID, Name: f.Name, Kind: f.Kind, EveryAsk: f.EveryAsk}
	if !slices.Contains(outbox.SharedKinds, f.Kind) {
		return ch, "", core.Invalid("kind", "%q is not a shared channel: one of %s", f.Kind, strings.Join(outbox.SharedKinds, ", "))
	}
	if err := h.channels.check(f.Kind); err != nil {
		return ch, "", err
	}
	if f.Name == "" {
		return ch, "", core.Invalid("name", "required: the channel's name here, like #oncall")
	}
	var old channels.Secret
	kept := false
	prev, err := h.store.SharedChannelByName(ctx, accountID, f.Name)
	switch {
	case err == nil && prev.Kind == f.Kind:
		if old, err = channels.SecretOf(prev); err == nil {
			kept = true
		}
	case err != nil && core.CodeOf(err) != core.NotFound:
		return ch, "", err
	}
	var (
		sec      channels.Secret
		settings any
		made     string
	)
	switch f.Kind {
	case outbox.ChannelSlack:
		if !slackChannel.MatchString(f.Channel) {
			return ch, "", core.Invalid("channel", "%q is not a Slack channel: its #name, or its id (C…, from the channel's details)", f.Channel)
		}
		settings = channels.SlackSettings{Channel: f.Channel}
	case outbox.ChannelTeams, outbox.ChannelWebhook:
		if sec.URL, err = h.secretURL(f.Kind, in.URL, old.URL, kept); err != nil {
			return ch, "", err
		}
		u, _ := url.Parse(sec.URL)
		settings = hostSettings{Host: u.Host}
		if f.Kind == outbox.ChannelWebhook {
			sec.SigningSecret = old.SigningSecret
			if !kept || in.NewSigningSecret || sec.SigningSecret == "" {
				made = channels.NewSigningSecret()
				sec.SigningSecret = made
			}
		}
	case outbox.ChannelNtfy:
		server := strings.TrimRight(f.Server, "/")
		if server == "" {
			return ch, "", core.Invalid("server", "required: the ntfy server, like https://ntfy.sh")
		}
		if err := h.channels.Guard.CheckURL(f.Kind, server); err != nil {
			return ch, "", core.Invalid("server", "%s", err.Error())
		}
		if u, _ := url.Parse(server); u.RawQuery != "" {
			return ch, "", core.Invalid("server", "the server's address has no query: like https://ntfy.sh")
		}
		if !ntfyTopic.MatchString(f.Topic) {
			return ch, "", core.Invalid("topic", "%q is not an ntfy topic: letters, digits, - and _, at most 64", f.Topic)
		}
		if strings.ContainsAny(in.Token, " \t\r\n") {
			return ch, "", core.Invalid("token", "an access token has no spaces")
		}
		sec.Token = in.Token
		if sec.Token == "" && kept {
			sec.Token = old.Token
		}
		settings = channels.NtfySettings{Server: server, Topic: f.Topic}
	}
	rawSettings, err := json.Marshal(settings)
	if err != nil {
		return ch, "", err
	}
	rawSecret, err := json.Marshal(sec)
	if err != nil {
		return ch, "", err
	}
	ch.Settings, ch.Secret = string(rawSettings), string(rawSecret)
	return ch, made, nil
}

// secretURL is the URL a Teams or webhook channel posts to: the one typed,
// checked by the guard, or the saved one when none was typed.
func (h *Handlers) secretURL(kind, typed, saved string, kept bool) (string, error) {
	if typed == "" {
		if kept && saved != "" {
			return saved, nil
		}
		what := "the webhook's URL"
		if kind == outbox.ChannelTeams {
			what = "the Workflows webhook URL from Teams"
		}
		return "", core.Invalid("url", "required: %s", what)
	}
	if len(typed) > 2048 {
		return "", core.Invalid("url", "the URL is longer than 2048 characters")
	}
	if err := h.channels.Guard.CheckURL(kind, typed); err != nil {
		return "", core.Invalid("url", "%s", err.Error())
	}
	return typed, nil
}

// sharedChannelRow says what a shared channel posts to, in words, and what
// of it is secret, never the secret itself.
func sharedChannelRow(ch outbox.SharedChannel) views.SharedChannelRow {
	row := views.SharedChannelRow{Name: ch.Name, Kind: ch.Kind, EveryAsk: ch.EveryAsk, UpdatedAt: ch.UpdatedAt}
	sec, err := channels.SecretOf(&ch)
	unreadable := err != nil
	switch ch.Kind {
	case outbox.ChannelSlack:
		var st channels.SlackSettings
		_ = json.Unmarshal([]byte(ch.Settings), &st)
		row.PostsTo = "the Slack channel " + st.Channel
		row.Secret = "none: the service's Slack app posts"
	case outbox.ChannelTeams:
		var st hostSettings
		_ = json.Unmarshal([]byte(ch.Settings), &st)
		row.PostsTo = "a Teams channel, through its Workflows webhook on " + st.Host
		row.Secret = "secret set (the webhook URL)"
	case outbox.ChannelNtfy:
		var st channels.NtfySettings
		_ = json.Unmarshal([]byte(ch.Settings), &st)
		row.PostsTo = "the topic " + st.Topic + " on " + st.Server
		row.Secret = "no access token"
		if sec.Token != "" {
			row.Secret = "secret set (an access token)"
		}
	case outbox.ChannelWebhook:
		var st hostSettings
		_ = json.Unmarshal([]byte(ch.Settings), &st)
		row.PostsTo = "signed events (Standard Webhooks) to " + st.Host
		row.Secret = "secret set (the URL and its signing secret)"
	}
	if unreadable {
		row.Secret = "the saved secret does not read: save the channel again"
	}
	return row
}

// sharedFormOf fills the form of a channel's kind with what of it is
// shown, for a change.
func sharedFormOf(ch *outbox.SharedChannel) views.SharedChannelForm {
	f := views.SharedChannelForm{Kind: ch.Kind, Name: ch.Name, EveryAsk: ch.EveryAsk}
	switch ch.Kind {
	case outbox.ChannelSlack:
		var st channels.SlackSettings
		_ = json.Unmarshal([]byte(ch.Settings), &st)
		f.Channel = st.Channel
	case outbox.ChannelNtfy:
		var st channels.NtfySettings
		_ = json.Unmarshal([]byte(ch.Settings), &st)
		f.Server, f.Topic = st.Server, st.Topic
	}
	return f
}

// urlPath is the path, query and fragment of a URL in an error's words,
// where a Teams or webhook URL keeps its key.
var urlPath = regexp.MustCompile(`(https?://[^/?#\s"']+)[/?#][^\s"']*`)

// withoutURLPaths shows an error's URLs without their path and query, as
// the guard's own words do: a dead letter's error never shows a secret URL.
func withoutURLPaths(s string) string {
	return urlPath.ReplaceAllString(s, "$1/…")
}
