package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/slack-go/slack"
)

// SlackSettings are a shared Slack channel's settings: the channel to post
// to, by id (C…) or name (#oncall).
type SlackSettings struct {
	Channel string `json:"channel"`
}

// Slack sends direct messages to people (found by the member id on their
// profile, or by their email address) and posts to channels, with one bot
// token, and updates a message once its ask ended. Nothing in a message
// decides: its only link opens the ask on the service.
type Slack struct {
	API *slack.Client
}

// NewSlack is the Slack channel for a bot token; apiURL, when not empty,
// is the Web API's base (a test server).
func NewSlack(token, apiURL string, client *http.Client) *Slack {
	opts := []slack.Option{slack.OptionHTTPClient(client)}
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(strings.TrimRight(apiURL, "/")+"/"))
	}
	return &Slack{API: slack.New(token, opts...)}
}

// Send posts the message and returns "<channel> <ts>", where it stays.
func (s *Slack) Send(ctx context.Context, out Outgoing) (string, error) {
	to, err := s.destination(ctx, out)
	if err != nil {
		return "", err
	}
	channel, ts, err := s.API.PostMessageContext(ctx, to, slack.MsgOptionText(subject(out.Note), false), slack.MsgOptionBlocks(slackBlocks(out)...))
	if err != nil {
		return "", slackRefusal(err)
	}
	return channel + " " + ts, nil
}

// Update changes the message that told of the ask to say how it ended.
func (s *Slack) Update(ctx context.Context, out Outgoing) error {
	channel, ts, ok := strings.Cut(out.Update, " ")
	if !ok {
		return &Permanent{Err: fmt.Errorf("no Slack message to update (%q)", out.Update)}
	}
	_, _, _, err := s.API.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(subject(out.Note), false), slack.MsgOptionBlocks(slackBlocks(out)...))
	if err != nil {
		return slackRefusal(err)
	}
	return nil
}

// destination is the channel a message goes to: the shared channel's, or
// the person's member id, found by their email address when they gave none.
func (s *Slack) destination(ctx context.Context, out Outgoing) (string, error) {
	if out.Shared != nil {
		var st SlackSettings
		if err := json.Unmarshal([]byte(out.Shared.Settings), &st); err != nil || st.Channel == "" {
			return "", &Permanent{Err: errors.New("the Slack channel needs a channel (C… or #name)")}
		}
		return st.Channel, nil
	}
	if out.Address != "" {
		return out.Address, nil
	}
	if out.Email == "" {
		return "", &Permanent{Err: errors.New("no Slack member id on the person's profile, and no email address to find them by")}
	}
	u, err := s.API.GetUserByEmailContext(ctx, out.Email)
	if err != nil {
		return "", slackRefusal(err)
	}
	return u.ID, nil
}

// slackRefusal sorts a Slack error: rate limited (Retry-After honoured) and
// failed connections are for now; an error Slack answered, and the guard's
// refusal of the API's address, are permanent.
func slackRefusal(err error) error {
	if refusedByGuard(err) {
		return &Permanent{Err: err}
	}
	var limited *slack.RateLimitedError
	if errors.As(err, &limited) {
		return &RetryAfter{Wait: limited.RetryAfter, Err: err}
	}
	var answered slack.SlackErrorResponse
	if errors.As(err, &answered) {
		switch answered.Err {
		case "ratelimited", "service_unavailable", "fatal_error", "internal_error", "request_timeout":
			return &RetryAfter{Err: err}
		}
		return &Permanent{Err: err}
	}
	var status slack.StatusCodeError
	if errors.As(err, &status) && status.Code < 500 && status.Code != http.StatusTooManyRequests {
		return &Permanent{Err: err}
	}
	return &RetryAfter{Err: err}
}

// slackBlocks lay a message out. The title and facts are plain text (an
// agent's words never format or link); the one link is ours.
func slackBlocks(out Outgoing) []slack.Block {
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, subject(out.Note), false, false), nil, nil)}
	var lines []slack.MixedElement
	for _, f := range facts(out.Note) {
		lines = append(lines, slack.NewTextBlockObject(slack.PlainTextType, f, false, false))
	}
	if len(lines) > 0 {
		blocks = append(blocks, slack.NewContextBlock("", lines...))
	}
	link := "<" + slackEscape(out.Link) + "|" + slackEscape(linkWords(out)) + ">"
	blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, link, false, true), nil, nil))
	return blocks
}

// slackEscape escapes the three characters Slack's mrkdwn reads.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
