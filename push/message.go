package push

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
)

// The body of a push, as it is sent. The outbox keeps the message without
// the parts made at sending: the one-time link of an ask's push (only its
// hash is stored, so the token exists in clear only in the encrypted push)
// and the declarative form that Safari 18.4+ shows without the service worker.

// linkPath is where the one-time link of a push for an ask opens.
func linkPath(approvalID, token string) string {
	return "/link/" + url.PathEscape(approvalID) + "/" + url.PathEscape(token)
}

// body builds the JSON a push carries for job j: for an ask, its URL is a
// fresh one-time link to the ask; every push carries the declarative form of
// the notification the service worker would show. waiting is the count of
// open asks a collapsed push tells of.
func (s *Sender) body(ctx context.Context, j *outbox.PushTarget, waiting int) ([]byte, error) {
	var msg outbox.PushMessage
	if j.Event == outbox.PushCollapsed {
		msg = outbox.PushMessage{Event: outbox.PushCollapsed, Title: waitingTitle(waiting), URL: "/", Waiting: waiting}
	} else if json.Unmarshal([]byte(j.Body), &msg) != nil {
		return []byte(j.Body), nil // not a message this sender knows: it goes as it was queued
	}
	if j.Event == outbox.PushAsk {
		token, err := s.store.IssuePushLink(ctx, j)
		if err != nil {
			return nil, err
		}
		if token != "" {
			msg.URL = linkPath(j.ApprovalID, token)
		}
	}
	msg.WebPush, msg.Notification = outbox.DeclarativeWebPush, s.declarative(msg)
	return json.Marshal(msg)
}

// declarative is the notification of msg as web/sw.js shows it (notificationFor),
// with the absolute URL a tap opens.
func (s *Sender) declarative(msg outbox.PushMessage) *outbox.DeclarativeNotification {
	n := &outbox.DeclarativeNotification{Title: msg.Title, Navigate: s.absolute(msg.URL)}
	switch msg.Event {
	case outbox.PushAsk:
		n.Body, n.Tag = "Open to answer", msg.ApprovalID
		if n.Title == "" {
			n.Title = "A new ask waits for you"
		}
	case outbox.PushDecided:
		status := msg.Status
		if status == "" {
			status = "closed"
		}
		n.Title, n.Body, n.Tag = "Decided: "+strings.ReplaceAll(status, "_", " "), msg.Title, msg.ApprovalID
	case outbox.PushCollapsed:
		n.Body, n.Tag, n.Navigate = "Open Countersign to answer them", "countersign-waiting", s.absolute("/")
	case people.PushPasskeyAdded:
		n.Body, n.Navigate = "Not you? Open Devices and remove it.", s.absolute("/devices")
	case people.PushPasskeyRemoved:
		n.Body, n.Navigate = "Open Devices to see your passkeys.", s.absolute("/devices")
	case outbox.PushTest:
		n.Body, n.Tag = "Notifications work on this device.", "countersign-test"
	}
	if n.Title == "" {
		n.Title = "Countersign"
	}
	return n
}

// absolute is path on the service's base URL: a declarative push's
// navigate is an absolute URL. Without a base URL the path is kept.
func (s *Sender) absolute(path string) string {
	if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") {
		path = "/"
	}
	return strings.TrimRight(s.opts.BaseURL, "/") + path
}
