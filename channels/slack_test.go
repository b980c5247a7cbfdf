package channels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/outbox"
)

// slackScene is the whole service whose Slack is a local SlackAPI, with
// ada, an owner, and an agent that files asks over MCP.
type slackScene struct {
	env   *apptest.Env
	slack *apptest.SlackAPI
	ada   *apptest.Browser
	bot   *apptest.Client
}

// newSlackScene starts the service on db with its Slack at a local API;
// its own pass of the sweeper waits an hour, so a test expires asks itself.
func newSlackScene(t *testing.T, db apptest.Database) *slackScene {
	t.Helper()
	slack := apptest.NewSlackAPI(t)
	cfg := slack.Config()
	cfg["COUNTERSIGN_CHANNEL_RETRY"] = "10ms" // only a Retry-After explains a longer wait
	cfg["COUNTERSIGN_SWEEP_EVERY"] = "1h"
	env := apptest.StartWeb(t, db, cfg)
	s := &slackScene{env: env, slack: slack, ada: env.Owner("ada")}
	_, token := env.Agent(env.Account.ID, "bot")
	s.bot = env.Connect(token)
	return s
}

// personID is the id of the person with subject.
func (s *slackScene) personID(t *testing.T, subject string) string {
	t.Helper()
	p, err := s.env.Store.PersonBySubject(context.Background(), subject)
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// turnOn turns a channel of kind on for the person with subject.
func (s *slackScene) turnOn(t *testing.T, subject, kind, address string) {
	t.Helper()
	if err := s.env.Store.SetPersonChannel(context.Background(), s.env.Account.ID, s.personID(t, subject), kind, address); err != nil {
		t.Fatalf("turn %s on for %s: %v", kind, subject, err)
	}
}

// reviewAsk files a review ask and returns it as stored.
func (s *slackScene) reviewAsk(t *testing.T, title string) *asks.Approval {
	t.Helper()
	id := s.bot.OK("approvals_create", map[string]any{"kind": "review", "title": title, "approve_means": "Reviewed", "deny_means": "Waits",
		"payload": map[string]any{"review": map[string]any{"url": "https://docs.example.com/" + strings.ReplaceAll(title, " ", "-")}}})["approval_id"].(string)
	return s.approval(t, id)
}

// toolCallAsk files a tool_call ask (it needs the check code) and returns it as stored.
func (s *slackScene) toolCallAsk(t *testing.T, title string) *asks.Approval {
	t.Helper()
	id := s.bot.OK("approvals_create", map[string]any{"kind": "tool_call", "title": title, "approve_means": "The call goes ahead once", "deny_means": "The call is refused",
		"payload": map[string]any{"tool_call": map[string]any{"server": "filesystem", "tool": "write_file", "arguments": map[string]any{"path": "/srv/a.txt"}}}})["approval_id"].(string)
	return s.approval(t, id)
}

func (s *slackScene) approval(t *testing.T, id string) *asks.Approval {
	t.Helper()
	a, err := s.env.Store.GetApproval(context.Background(), s.env.Account.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// posted waits for the message posted to channel that holds title.
func (s *slackScene) posted(t *testing.T, channel, title string) apptest.SlackCall {
	t.Helper()
	c, ok := s.slack.Wait(10*time.Second, func(c apptest.SlackCall) bool {
		return c.Method == "chat.postMessage" && c.Channel == channel && c.Error == "" && c.Text == title
	})
	if !ok {
		t.Fatalf("no message titled %q was posted to %s; Slack took %+v", title, channel, s.slack.Calls())
	}
	return c
}

// updated waits for the update of the message at ts in channel.
func (s *slackScene) updated(t *testing.T, channel, ts string) apptest.SlackCall {
	t.Helper()
	c, ok := s.slack.Wait(10*time.Second, func(c apptest.SlackCall) bool {
		return c.Method == "chat.update" && c.Channel == channel && c.TS == ts && c.Error == ""
	})
	if !ok {
		t.Fatalf("the message %s in %s was not updated; Slack took %+v", ts, channel, s.slack.Calls())
	}
	return c
}

// settled waits until every channel message of an ask has its outcome
// recorded (the sender records it once Slack answered), and returns them
// in the order they were queued.
func (s *slackScene) settled(t *testing.T, approvalID string) []outbox.ChannelMessage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out []outbox.ChannelMessage
		if err := s.env.Store.DB().Table("channel_messages").Where("approval_id = ?", approvalID).Order("seq").Find(&out).Error; err != nil {
			t.Fatal(err)
		}
		done := len(out) > 0
		for _, m := range out {
			done = done && m.DoneAt != nil
		}
		if done || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// block is what a test reads of a message's blocks: every text in them,
// the one link, and whatever in them could act (an actions block, a
// button, an action id).
type block struct {
	texts   []string
	link    string
	actions []string
}

var slackLink = regexp.MustCompile(`^<([^|>]+)\|([^>]+)>$`)

func readBlocks(t *testing.T, raw string) block {
	t.Helper()
	var blocks []any
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil || len(blocks) == 0 {
		t.Fatalf("blocks %q: %v, want a JSON array of blocks", raw, err)
	}
	var b block
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ty, _ := v["type"].(string); ty == "actions" || ty == "button" || strings.Contains(ty, "select") {
				b.actions = append(b.actions, "a "+ty+" element")
			}
			if id, ok := v["action_id"]; ok {
				b.actions = append(b.actions, fmt.Sprintf("action id %v", id))
			}
			if text, ok := v["text"].(string); ok {
				b.texts = append(b.texts, text)
				if m := slackLink.FindStringSubmatch(text); m != nil {
					if b.link != "" {
						t.Errorf("a second link %q beside %q", text, b.link)
					}
					b.link = m[1]
				}
			}
			for _, w := range v {
				walk(w)
			}
		case []any:
			for _, w := range v {
				walk(w)
			}
		}
	}
	walk(blocks)
	return b
}

func (b block) has(text string) bool {
	for _, s := range b.texts {
		if s == text {
			return true
		}
	}
	return false
}

// An ask reaches a person who turned Slack on by a direct message from the
// bot: found by the email address of their email channel when they gave no
// member id, or straight by the member id they gave. The message holds the
// title, the kind, the verified agent, the badges and the deadline, and one
// link, the person's own one-time link to the ask; nothing in it decides.
func TestAnAskReachesAPersonBySlackDirectMessage(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newSlackScene(t, db)
		s.env.Owner("bob")
		s.slack.AddUser("ada@example.com", "U0ADA")
		s.slack.AddUser("bob@example.com", "U0BOB")
		s.turnOn(t, "ada", outbox.ChannelEmail, "ada@example.com")
		s.turnOn(t, "ada", outbox.ChannelSlack, "") // found by her email address
		s.turnOn(t, "bob", outbox.ChannelSlack, "U0BOB")

		a := s.toolCallAsk(t, "Call write_file on filesystem")
		facts := []string{"Kind: tool call", "Asked by: " + a.RequesterSubject + " (the agent's token, verified)", "Marked: needs code",
			"Answer by: " + a.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC")}
		if a.RequesterSubject == "" {
			t.Fatal("the ask names no agent")
		}

		for _, tc := range []struct{ name, person, member string }{
			{"found by her email address, ada gets a DM", "ada", "U0ADA"},
			{"by the member id he gave, bob gets a DM", "bob", "U0BOB"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				dm := s.posted(t, tc.member, a.Title)
				if !strings.HasPrefix(dm.Posted, "D") {
					t.Errorf("the message to %s landed in %q, want the bot's DM with them (D…)", tc.member, dm.Posted)
				}
				b := readBlocks(t, dm.Blocks)
				if !b.has(a.Title) {
					t.Errorf("the DM's blocks %q hold no title %q", b.texts, a.Title)
				}
				for _, f := range facts {
					if !b.has(f) {
						t.Errorf("the DM's blocks %q miss %q", b.texts, f)
					}
				}
				if len(b.actions) > 0 {
					t.Errorf("the DM carries %v: no channel message may approve or deny", b.actions)
				}
				for _, text := range append(b.texts, dm.Text) {
					if lower := strings.ToLower(text); strings.Contains(lower, "approve") || strings.Contains(lower, "deny") {
						t.Errorf("the DM says %q, want no approve or deny in it", text)
					}
				}
				prefix := s.env.URL + "/link/" + a.ID + "/pl_"
				if !strings.HasPrefix(b.link, prefix) {
					t.Fatalf("the DM links %q, want the person's one-time link %s…", b.link, prefix)
				}

				// The link opens the ask once, for the browser that opens it.
				phone, thief := apptest.NewBrowser(t, s.env.URL), apptest.NewBrowser(t, s.env.URL)
				if status, to := open(t, phone, b.link); status != http.StatusSeeOther || to != "/link/"+a.ID {
					t.Errorf("opening the DM's link answered %d to %q, want 303 to /link/%s", status, to, a.ID)
				}
				if status, to := open(t, thief, b.link); status == http.StatusSeeOther && to == "/link/"+a.ID {
					t.Errorf("the DM's link opened a second time: a one-time link works once")
				}
			})
		}

		lookups := 0
		for _, c := range s.slack.Calls() {
			if c.Method == "users.lookupByEmail" {
				lookups++
				if c.Email != "ada@example.com" || c.Error != "" {
					t.Errorf("a lookup of %q answered %q, want only ada's address, found", c.Email, c.Error)
				}
			}
		}
		if lookups != 1 {
			t.Errorf("%d lookups by email, want 1 (ada's; bob gave his member id)", lookups)
		}
	})
}

// open loads path (absolute) as a person's browser does and answers the
// status and where a redirect goes.
func open(t *testing.T, b *apptest.Browser, link string) (int, string) {
	t.Helper()
	res, err := b.HTTP.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Location")
}

// Once an ask ends, the DM that told of it is changed in place (chat.update
// on the DM's channel and ts) to say how: approved, by whom and when, or
// expired. The changed message links the ask's page and no longer asks.
func TestASlackMessageIsUpdatedToSayHowItsAskEnded(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newSlackScene(t, db)
		s.turnOn(t, "ada", outbox.ChannelSlack, "U0ADA")
		s.slack.AddUser("ada@example.com", "U0ADA")

		ended := func(t *testing.T, a *asks.Approval, dm apptest.SlackCall, words string) {
			t.Helper()
			up := s.updated(t, dm.Posted, dm.TS)
			if want := words + ": " + a.Title; up.Text != want {
				t.Errorf("the DM was updated to %q, want %q", up.Text, want)
			}
			b := readBlocks(t, up.Blocks)
			if !b.has(words+": "+a.Title) || b.link != s.env.URL+"/approvals/"+a.ID || len(b.actions) > 0 {
				t.Errorf("the updated DM: texts %q, link %q, actions %v; want how it ended and the ask's page, nothing to act on", b.texts, b.link, b.actions)
			}
			for _, text := range b.texts {
				if strings.HasPrefix(text, "Answer by:") {
					t.Errorf("the updated DM still asks for an answer: %q", text)
				}
			}
			if m, ok := s.slack.Message(dm.Posted, dm.TS); !ok || m.Text != up.Text {
				t.Errorf("the DM in Slack reads %q, want %q", m.Text, up.Text)
			}
		}

		t.Run("approved by ada at HH:MM UTC", func(t *testing.T) {
			a := s.toolCallAsk(t, "Call write_file before the approve")
			dm := s.posted(t, "U0ADA", a.Title)
			if r := s.ada.Decide(a.ID, "approve", ""); r.Status != http.StatusOK {
				t.Fatalf("ada approves: %s", r)
			}
			a = s.approval(t, a.ID)
			if a.Status != asks.StatusApproved || a.DecidedAt == nil {
				t.Fatalf("the ask after the approve: %s at %v", a.Status, a.DecidedAt)
			}
			ended(t, a, dm, "Approved by ada at "+a.DecidedAt.UTC().Format("15:04")+" UTC")
		})

		t.Run("expired", func(t *testing.T) {
			a := s.reviewAsk(t, "Review the expiring doc")
			dm := s.posted(t, "U0ADA", a.Title)
			s.settled(t, a.ID) // its lease ended: a week on, a lease still held would look run out
			later := a.ExpiresAt.Add(time.Minute).Sub(time.Now())
			s.env.Store.SetClock(func() time.Time { return time.Now().Add(later) })
			defer s.env.Store.SetClock(time.Now)
			if n, err := s.env.Store.ExpireDue(context.Background()); err != nil || n != 1 {
				t.Fatalf("ExpireDue = %d, %v; want the ask expired", n, err)
			}
			ended(t, s.approval(t, a.ID), dm, "Expired")
		})
	})
}

// A shared Slack channel that takes every ask gets a post of each, with the
// plain link of the ask's page (a sign-in answers it), never a person's
// one-time link; the post, too, says how the ask ended.
func TestASharedSlackChannelPostsEveryAskWithThePlainAskLink(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newSlackScene(t, db)
		s.slack.AddChannel("C0ONCALL", "oncall")
		if err := s.env.Store.SaveSharedChannel(context.Background(), outbox.SharedChannel{AccountID: s.env.Account.ID, Name: "#oncall", Kind: outbox.ChannelSlack,
			Settings: `{"channel":"C0ONCALL"}`, EveryAsk: true}); err != nil {
			t.Fatalf("save the shared Slack channel: %v", err)
		}
		review, tool := s.reviewAsk(t, "Review the runbook"), s.toolCallAsk(t, "Call write_file for oncall")
		for _, a := range []*asks.Approval{review, tool} {
			post := s.posted(t, "C0ONCALL", a.Title)
			b := readBlocks(t, post.Blocks)
			if post.Posted != "C0ONCALL" || b.link != s.env.URL+"/approvals/"+a.ID || !b.has("Kind: "+strings.ReplaceAll(a.Kind, "_", " ")) || len(b.actions) > 0 {
				t.Errorf("the post of %s in %s: link %q, texts %q, actions %v; want the ask's page, its kind, nothing to act on",
					a.ID, post.Posted, b.link, b.texts, b.actions)
			}
			for _, m := range s.settled(t, a.ID) {
				if m.Channel != "#oncall" || m.PersonID != "" || m.Outcome != "sent" {
					t.Errorf("a channel message of %s: to %q/%q, %s; want only the post to #oncall, sent", a.ID, m.Channel, m.PersonID, m.Outcome)
				}
			}
		}
		if r := s.ada.Decide(review.ID, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("ada approves: %s", r)
		}
		post := s.posted(t, "C0ONCALL", review.Title)
		if up := s.updated(t, "C0ONCALL", post.TS); !strings.HasPrefix(up.Text, "Approved by ada at ") {
			t.Errorf("the #oncall post was updated to %q, want it approved by ada", up.Text)
		}
	})
}

// A 429 from Slack is tried again, and not before its Retry-After: with a
// retry base of 10 ms, only the header explains the two seconds between
// the tries.
func TestSlackRateLimitIsRetriedAfterItsRetryAfter(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := newSlackScene(t, db)
		s.slack.AddUser("ada@example.com", "U0ADA")
		s.turnOn(t, "ada", outbox.ChannelSlack, "U0ADA")
		s.slack.RateLimit("chat.postMessage", 1, 2)

		a := s.reviewAsk(t, "Review under a rate limit")
		sent := s.posted(t, "U0ADA", a.Title)
		var limited []apptest.SlackCall
		for _, c := range s.slack.Calls() {
			if c.Method == "chat.postMessage" && c.Status == http.StatusTooManyRequests {
				limited = append(limited, c)
			}
		}
		if len(limited) != 1 {
			t.Fatalf("%d posts answered 429, want 1: %+v", len(limited), s.slack.Calls())
		}
		if gap := sent.At.Sub(limited[0].At); gap < 2*time.Second {
			t.Errorf("tried again %s after the 429, want at least its Retry-After of 2s", gap)
		}
		msgs := s.settled(t, a.ID)
		if len(msgs) != 1 || msgs[0].Outcome != "sent" || msgs[0].Attempts != 2 || !strings.Contains(msgs[0].LastError, "rate limit") ||
			msgs[0].RemoteRef != sent.Posted+" "+sent.TS {
			t.Errorf("the message after the retry: %+v; want sent on the 2nd try, the rate limit its last error, its place in Slack kept", msgs)
		}
	})
}

// An error Slack answers ({"ok":false,"error":"channel_not_found"}) is no
// failure of the moment: the message is dead at once, says why, and is
// never tried again.
func TestASlackErrorMakesTheMessageDeadAtOnce(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		ctx := context.Background()
		s := newSlackScene(t, db)
		s.slack.AddChannel("C0ONCALL", "oncall")
		for name, id := range map[string]string{"#gone": "C0GONE", "#oncall": "C0ONCALL"} {
			if err := s.env.Store.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: s.env.Account.ID, Name: name, Kind: outbox.ChannelSlack,
				Settings: `{"channel":"` + id + `"}`, EveryAsk: true}); err != nil {
				t.Fatal(err)
			}
		}
		a := s.reviewAsk(t, "Review for a channel that is gone")
		var dead outbox.ChannelMessage
		for _, m := range s.settled(t, a.ID) {
			if m.Channel == "#gone" {
				dead = m
			}
		}
		if dead.Outcome != "dead" || dead.Attempts != 1 || !strings.Contains(dead.LastError, "channel_not_found") {
			t.Fatalf("the message to #gone: outcome %q after %d tries, last error %q; want dead after one, saying channel_not_found",
				dead.Outcome, dead.Attempts, dead.LastError)
		}
		if listed, err := s.env.Store.DeadMessages(ctx, s.env.Account.ID, 10); err != nil || len(listed) != 1 || listed[0].Seq != dead.Seq {
			t.Errorf("Admin's dead messages: %+v (%v), want the one to #gone", listed, err)
		}

		// Another ask goes through the same sender after it: by then a retry
		// of the dead message (10 ms later) would have reached Slack.
		other := s.reviewAsk(t, "Review after the dead one")
		s.posted(t, "C0ONCALL", other.Title)
		tries := 0
		for _, c := range s.slack.Calls() {
			if c.Channel == "C0GONE" && c.Text == a.Title {
				tries++
				if c.Error != "channel_not_found" {
					t.Errorf("Slack answered the post to C0GONE %q, want channel_not_found", c.Error)
				}
			}
		}
		var again outbox.ChannelMessage
		if err := s.env.Store.DB().Table("channel_messages").Where("seq = ?", dead.Seq).Take(&again).Error; err != nil {
			t.Fatal(err)
		}
		if tries != 1 || again.Attempts != 1 || again.Outcome != "dead" {
			t.Errorf("the dead message was tried %d times in Slack, %d in the outbox, now %q; want one try, dead", tries, again.Attempts, again.Outcome)
		}
	})
}

// The Slack API on a private address that COUNTERSIGN_CHANNEL_PRIVATE_HOSTS
// does not allow is refused by the guard when the post connects: no call
// reaches it, and the message is dead at once, saying why (a retry would
// meet the same guard).
func TestTheGuardKeepsSlackOffAPrivateAddressNotAllowed(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		slack := apptest.NewSlackAPI(t)
		env := apptest.StartWeb(t, db, map[string]string{"COUNTERSIGN_SLACK_BOT_TOKEN": slack.Token, "COUNTERSIGN_SLACK_API_URL": slack.Server.URL,
			"COUNTERSIGN_CHANNEL_RETRY": "10ms"})
		s := &slackScene{env: env, slack: slack, ada: env.Owner("ada")}
		_, token := env.Agent(env.Account.ID, "bot")
		s.bot = env.Connect(token)
		s.turnOn(t, "ada", outbox.ChannelSlack, "U0ADA")

		a := s.reviewAsk(t, "Review behind the guard")
		msgs := s.settled(t, a.ID)
		if len(msgs) != 1 || msgs[0].Outcome != "dead" || msgs[0].Attempts != 1 || !strings.Contains(msgs[0].LastError, "private address") {
			t.Errorf("the message to a Slack API on a private address: %+v; want dead after one try, saying the address is private", msgs)
		}
		if calls := slack.Calls(); len(calls) != 0 {
			t.Errorf("Slack took %d calls past the guard: %+v", len(calls), calls)
		}
	})
}
