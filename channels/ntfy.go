package channels

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign/models/outbox"
)

// NtfySettings are a shared ntfy channel's settings: the server and topic.
type NtfySettings struct {
	Server string `json:"server"` // https://ntfy.sh or your own
	Topic  string `json:"topic"`
}

// Ntfy publishes to a topic on an ntfy server, with its access token when
// the channel has one. ntfy has no end-to-end encryption, so a message
// there holds the plain ask link (sign-in required) and no action.
type Ntfy struct {
	Client *http.Client
}

// Send publishes the message; its click opens the ask.
func (n *Ntfy) Send(ctx context.Context, out Outgoing) (string, error) {
	if out.Shared == nil {
		return "", &Permanent{Err: errors.New("ntfy is a shared channel")}
	}
	var st NtfySettings
	if err := json.Unmarshal([]byte(out.Shared.Settings), &st); err != nil || st.Server == "" || st.Topic == "" {
		return "", &Permanent{Err: errors.New("the ntfy channel needs a server and a topic")}
	}
	sec, err := SecretOf(out.Shared)
	if err != nil {
		return "", err
	}
	body := strings.Join(facts(out.Note), "\n")
	headers := map[string]string{
		"Title": subject(out.Note), "Click": out.Link, "Tags": "countersign",
		"Content-Type": "text/plain; charset=utf-8",
	}
	if out.Note.Event == outbox.MessageAsk || out.Note.Event == outbox.MessageEscalation {
		headers["Priority"] = "high"
	}
	if sec.Token != "" {
		headers["Authorization"] = "Bearer " + sec.Token
	}
	res, err := post(ctx, n.Client, strings.TrimRight(st.Server, "/")+"/"+url.PathEscape(st.Topic), []byte(body), headers, "the ntfy server")
	if err != nil {
		return "", err
	}
	var published struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&published)
	res.Body.Close()
	return published.ID, nil
}
