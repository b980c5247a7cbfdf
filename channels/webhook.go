package channels

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models/outbox"
)

// Secret is what a shared channel keeps secret, as JSON in its row: the URL
// it posts to (a Teams or webhook URL holds its own credential), an access
// token (ntfy), a signing secret (a webhook's, whsec_…).
type Secret struct {
	URL           string `json:"url,omitempty"`
	Token         string `json:"token,omitempty"`
	SigningSecret string `json:"signing_secret,omitempty"`
}

// SecretOf reads a shared channel's secret; a channel saved without one
// (ntfy's is optional) has none.
func SecretOf(c *outbox.SharedChannel) (Secret, error) {
	var s Secret
	if c.Secret == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(c.Secret), &s); err != nil {
		return s, &Permanent{Err: fmt.Errorf("the channel %s's secret does not read: save it again", c.Name)}
	}
	return s, nil
}

// NewSigningSecret makes a webhook's signing secret in the Standard
// Webhooks form: whsec_ and 32 random bytes in base64.
func NewSigningSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// Webhook posts an event as JSON to a URL, signed as Standard Webhooks
// sign: webhook-id (the message's key, the same on every retry, so a
// receiver drops a repeat), webhook-timestamp, and webhook-signature
// v1,<base64 HMAC-SHA256 over id.timestamp.body with the secret's key>.
type Webhook struct {
	Client *http.Client
	Now    func() time.Time
}

// WebhookEvent is the body a webhook receives.
type WebhookEvent struct {
	Type      string      `json:"type"` // approval.asked, approval.reminded, approval.escalated, approval.decided, test
	Timestamp time.Time   `json:"timestamp"`
	Data      WebhookData `json:"data"`
}

// WebhookData is what a webhook is told of an ask: what any message holds.
type WebhookData struct {
	ApprovalID string     `json:"approval_id,omitempty"`
	Title      string     `json:"title"`
	Kind       string     `json:"kind,omitempty"`
	Agent      string     `json:"agent,omitempty"`
	Badges     []string   `json:"badges,omitempty"`
	ExpiresAt  time.Time  `json:"expires_at"`
	URL        string     `json:"url"`
	Status     string     `json:"status,omitempty"`
	DecidedBy  string     `json:"decided_by,omitempty"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
}

var webhookTypes = map[string]string{outbox.MessageAsk: "approval.asked", outbox.MessageReminder: "approval.reminded",
	outbox.MessageEscalation: "approval.escalated", outbox.MessageDecided: "approval.decided", outbox.MessageTest: "test"}

// Send posts the event.
func (w *Webhook) Send(ctx context.Context, out Outgoing) (string, error) {
	if out.Shared == nil {
		return "", &Permanent{Err: errors.New("a webhook is a shared channel")}
	}
	sec, err := SecretOf(out.Shared)
	if err != nil {
		return "", err
	}
	n := out.Note
	now := w.Now()
	body, err := json.Marshal(WebhookEvent{Type: webhookTypes[n.Event], Timestamp: now.UTC(), Data: WebhookData{
		ApprovalID: n.ApprovalID, Title: n.Title, Kind: n.Kind, Agent: n.Agent, Badges: n.Badges, ExpiresAt: n.ExpiresAt, URL: out.Link,
		Status: n.Status, DecidedBy: n.DecidedBy, DecidedAt: n.DecidedAt,
	}})
	if err != nil {
		return "", err
	}
	id := "msg_" + strings.NewReplacer("/", "_", ":", "_").Replace(out.Message.Key)
	headers, err := SignWebhook(sec.SigningSecret, id, now, body)
	if err != nil {
		return "", &Permanent{Err: err}
	}
	headers["Content-Type"] = "application/json"
	res, err := post(ctx, w.Client, sec.URL, body, headers, "the webhook")
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return id, nil
}

// SignWebhook is the Standard Webhooks headers of body sent as id at ts,
// signed with secret (whsec_<base64 key>).
func SignWebhook(secret, id string, ts time.Time, body []byte) (map[string]string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") || len(key) < 24 {
		return nil, errors.New("the signing secret is not whsec_ and at least 24 bytes in base64")
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + stamp + "."))
	mac.Write(body)
	return map[string]string{
		"webhook-id":        id,
		"webhook-timestamp": stamp,
		"webhook-signature": "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)),
	}, nil
}
