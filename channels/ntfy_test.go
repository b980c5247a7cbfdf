package channels_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/models/outbox"
)

// An ntfy channel saved without an access token (the secret is optional
// for ntfy) publishes without one, instead of being refused for a secret
// it never needed.
func TestAnNtfyChannelWithoutATokenPublishesWithoutOne(t *testing.T) {
	type published struct {
		path, auth, title, click string
		body                     string
	}
	got := make(chan published, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- published{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Title"), r.Header.Get("Click"), string(body)}
		_, _ = io.WriteString(w, `{"id":"ntfy1"}`)
	}))
	defer srv.Close()

	shared := &outbox.SharedChannel{Name: "#ops", Kind: outbox.ChannelNtfy, Settings: `{"server":"` + srv.URL + `","topic":"ops"}`}
	out := channels.Outgoing{
		Message: &outbox.ChannelMessage{Channel: "#ops", Kind: outbox.ChannelNtfy, Event: outbox.MessageAsk},
		Note:    outbox.ChannelNote{Event: outbox.MessageAsk, Title: "Merge acme/web#1", Kind: "pull_request", ExpiresAt: time.Now().Add(time.Hour)},
		Link:    "https://countersign.example.com/approvals/appr_1",
		Shared:  shared,
	}
	ref, err := (&channels.Ntfy{Client: srv.Client()}).Send(context.Background(), out)
	if err != nil || ref != "ntfy1" {
		t.Fatalf("send to ntfy without a token: ref %q, %v; want ntfy1", ref, err)
	}
	p := <-got
	if p.path != "/ops" || p.auth != "" || p.title != "Merge acme/web#1" || p.click != out.Link || !strings.HasPrefix(p.body, "Kind: pull request\n") {
		t.Errorf("published %+v, want topic /ops, no Authorization, the title, the ask link and the facts", p)
	}
}
