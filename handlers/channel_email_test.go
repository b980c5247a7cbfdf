package handlers_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/rules"
)

// mailScene is a scene whose service sends email through a Mailpit that
// requires STARTTLS (with its own certificate authority, trusted through
// COUNTERSIGN_SMTP_CA_FILE) and a login, and whose owner ada turned email on.
type mailScene struct {
	*scene
	mail *apptest.Mailpit
}

func newMailScene(t *testing.T, db apptest.Database) *mailScene {
	t.Helper()
	mp := apptest.StartMailpit(t)
	s := &mailScene{scene: newScene(t, db, map[string]string{
		"COUNTERSIGN_SMTP_URL": mp.SMTPURL(), "COUNTERSIGN_SMTP_FROM": "Countersign <approvals@example.com>",
		"COUNTERSIGN_SMTP_CA_FILE": mp.CAFile, "COUNTERSIGN_CHANNEL_RETRY": "10ms",
	}), mail: mp}
	ctx := context.Background()
	ada, err := s.env.Store.PersonBySubject(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.env.Store.SetPersonChannel(ctx, s.env.Account.ID, ada.ID, outbox.ChannelEmail, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	return s
}

var mailedLink = regexp.MustCompile(`http://[^/\s]+(/link/(appr_[a-z0-9]+)/pl_[A-Za-z0-9_-]+)`)

// mailedLink waits for the email of ask id and returns the path of the
// one-time link it carries, with the message.
func (s *mailScene) mailedLink(t *testing.T, id string) (string, apptest.MailpitMessage) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, m := range s.mail.Messages(t) {
			if l := mailedLink.FindStringSubmatch(m.Text); l != nil && l[2] == id {
				return l[1], m
			}
		}
	}
	t.Fatalf("no email with a link to %s arrived", id)
	return "", apptest.MailpitMessage{}
}

// An ask reaches a person by email, through a server that requires
// STARTTLS and a login: the message says what the ask is (title, kind, the
// verified agent, the deadline) and nothing else of the payload, and its
// link decides with one passkey prompt in a browser that never signed in,
// once: opened again it is refused, and it decides no other ask. An email
// cannot be changed, so the decision sends none; the outbox says why.
func TestAnAskReachesAPersonByEmailAndItsLinkDecidesOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newMailScene(t, db)
		id := s.prAsk(t, "")
		link, m := s.mailedLink(t, id)
		if len(m.To) != 1 || m.To[0].Address != "ada@example.com" || !strings.HasPrefix(m.Subject, "[Countersign] Merge acme/web#") {
			t.Fatalf("the email went to %v with subject %q", m.To, m.Subject)
		}
		for _, want := range []string{"Kind: pull request", "Asked by: agent:bot (the agent's token, verified)", "Answer by: ", "this link works once",
			"Countersign never takes an answer by email"} {
			if !strings.Contains(m.Text, want) {
				t.Errorf("the email does not say %q:\n%s", want, m.Text)
			}
		}
		for _, never := range []string{"Fix login redirect", "abcdef", "acme/web#9" + "0" + "0 head"} { // the payload's own words stay on the service
			if strings.Contains(m.Text, never) || strings.Contains(m.HTML, never) {
				t.Errorf("the email holds the payload's %q", never)
			}
		}
		if !strings.Contains(m.HTML, `href="http`) || strings.Contains(strings.ToLower(m.HTML), "approve</") {
			t.Errorf("the HTML email: want one link and no approve button:\n%s", m.HTML)
		}

		phone := phoneOf(t, s.env.URL, s.owner)
		if status, _, to := openPage(t, phone, link); status != http.StatusSeeOther || to != "/link/"+id {
			t.Fatalf("opening the emailed link answered %d to %q, want 303 to /link/%s", status, to, id)
		}
		other := s.prAsk(t, "")
		before := s.state(t, other)
		refused(t, linkDecide(t, phone, other, "approve"), http.StatusNotFound, "NOT_FOUND") // the link opened one ask, not this one
		s.unchanged(t, other, before)

		counter := phone.Passkey.Counter
		if r := linkDecide(t, phone, id, "approve"); r.Status != http.StatusOK {
			t.Fatalf("deciding through the emailed link: %s", r)
		}
		if phone.Passkey.Counter != counter+1 {
			t.Errorf("the passkey signed %d times, want once", phone.Passkey.Counter-counter)
		}
		if got := s.state(t, id); got.Status != "approved" || got.DecidedBy != "ada" {
			t.Fatalf("the ask is %s by %q, want approved by ada", got.Status, got.DecidedBy)
		}
		if status, body, _ := openPage(t, phoneOf(t, s.env.URL, s.owner), link); status == http.StatusOK || status == http.StatusSeeOther {
			t.Errorf("the emailed link opened again: HTTP %d\n%s", status, body)
		}

		// The decision queues no email: the one sent cannot change.
		var outcomes []string
		s.env.Store.DB().Table("channel_messages").Where("approval_id = ?", id).Order("seq").Pluck("outcome", &outcomes)
		if len(outcomes) != 1 || outcomes[0] != "sent" {
			t.Errorf("the ask's channel messages ended %q, want the one email sent", outcomes)
		}
	})
}

// The link of an email lives 15 minutes at most, as a push's does: after
// that it is refused, and the ask is still answered after a sign-in.
func TestAnEmailedLinkExpiresAfterFifteenMinutes(t *testing.T) {
	s := newMailScene(t, apptest.SQLite)
	id := s.prAsk(t, "")
	link, _ := s.mailedLink(t, id)
	s.clock.advance(outbox.PushLinkLife)
	if status, body, _ := openPage(t, phoneOf(t, s.env.URL, s.owner), link); status != http.StatusConflict || !strings.Contains(body, "expired") {
		t.Errorf("the emailed link after 15 minutes: HTTP %d, want 409 (expired):\n%s", status, body)
	}
	if r := s.owner.Decide(id, "approve", ""); r.Status != http.StatusOK {
		t.Errorf("ada, signed in, approves the ask: %s", r)
	}
}

// Reminders go to the same channels as the first message: an ask a rule
// covers, unanswered past its reminder interval, is emailed again, once
// per reminder.
func TestAReminderGoesToTheSameChannelsAsTheFirstMessage(t *testing.T) {
	s := newMailScene(t, apptest.SQLite)
	spec := rules.RuleSpec{Name: "owners review pull requests", Kinds: []string{ask.KindPullRequest}, Count: 1,
		Pool: rules.Pool{Kind: rules.PoolRole, Role: rules.PoolOwners}, RemindEvery: rules.Duration(10 * time.Minute)}
	if _, err := s.env.Store.SetRule(context.Background(), s.env.Account.ID, "reviews", spec, "cli:test"); err != nil {
		t.Fatal(err)
	}
	id := s.prAsk(t, "")
	s.mailedLink(t, id)
	s.clock.advance(10 * time.Minute)
	for range 2 { // a second pass at the same time reminds nobody again
		if _, _, err := s.env.Store.RemindAndEscalate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var reminders []apptest.MailpitMessage
	for deadline := time.Now().Add(20 * time.Second); len(reminders) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, m := range s.mail.Messages(t) {
			if strings.HasPrefix(m.Subject, "[Countersign] Reminder: Merge acme/web#") {
				reminders = append(reminders, m)
			}
		}
	}
	if len(reminders) != 1 || len(reminders[0].To) != 1 || reminders[0].To[0].Address != "ada@example.com" || !mailedLink.MatchString(reminders[0].Text) {
		t.Fatalf("%d reminder emails (%v), want one to ada with a fresh link", len(reminders), reminders)
	}
}
