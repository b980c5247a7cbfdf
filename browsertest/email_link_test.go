package browsertest

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

var emailedLink = regexp.MustCompile(`http://[^/\s]+(/link/(appr_[a-z0-9]+)/pl_[A-Za-z0-9_-]+)`)

// An ask reaches ada by email, through Mailpit (STARTTLS and a login); the
// link in the message, opened in a browser that never signed in and holds
// her synced passkey, decides the ask with one passkey prompt: the
// authenticator's sign count goes up by exactly one, and the proof verifies.
func TestAnEmailedLinkOpenedInABrowserThatNeverSignedInDecidesWithOnePasskeyPrompt(t *testing.T) {
	NeedChromium(t)
	mp := apptest.StartMailpit(t)
	env := apptest.StartWeb(t, apptest.SQLite, map[string]string{
		"COUNTERSIGN_SMTP_URL": mp.SMTPURL(), "COUNTERSIGN_SMTP_FROM": "Countersign <approvals@example.com>",
		"COUNTERSIGN_SMTP_CA_FILE": mp.CAFile, "COUNTERSIGN_CHANNEL_RETRY": "10ms",
	})
	_, token := env.Agent(env.Account.ID, "bot")
	s := &service{t: t, env: env, page: browser.Open(t, env.URL), agent: env.Connect(token)}
	ada := s.signUp("ada", core.RoleOwner)
	if err := env.Store.SetPersonChannel(context.Background(), env.Account.ID, ada.ID, outbox.ChannelEmail, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	id, sha := s.ask(pullRequestAsk(901, "abcdef7654321"))
	link := ""
	for deadline := time.Now().Add(20 * time.Second); link == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, m := range mp.Messages(t) {
			if l := emailedLink.FindStringSubmatch(m.Text); l != nil && l[2] == id {
				link = l[1]
			}
		}
	}
	if link == "" {
		t.Fatalf("no email with a link to %s arrived", id)
	}

	phone := phoneWith(t, s, s.page)
	phone.Go(link)
	phone.WaitVisible("[data-testid=approve]")
	if got := shownHash(phone); got != sha {
		t.Errorf("the page shows payload hash %q, want %q", got, sha)
	}
	before := signCount(t, phone)
	phone.ClickToLoad("[data-testid=approve]", "/link/"+id+"/done", "[data-testid=receipt]")
	if after := signCount(t, phone); after != before+1 {
		t.Errorf("the passkey signed %v times, want exactly once (no separate sign-in)", after-before)
	}
	got := s.checkGet(id, "approved", "approve", "ada", "")
	s.checkProof(got["proof"], id, sha, "approve", "ada")
}
