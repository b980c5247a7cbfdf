package handlers_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/rules"
)

// signedIn says whether b's session still opens the inbox.
func (b *browser) signedIn() bool {
	b.t.Helper()
	res, _ := b.get("/")
	switch {
	case res.StatusCode == http.StatusOK:
		return true
	case res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/signin"):
		return false
	}
	b.t.Fatalf("GET /: HTTP %d to %q", res.StatusCode, res.Header.Get("Location"))
	return false
}

// A session unused for COUNTERSIGN_SESSION_IDLE_WEB ends; one in use lives on.
func TestASessionEndsWhenIdle(t *testing.T) {
	env := apptest.Start(t, apptest.SQLite, map[string]string{"COUNTERSIGN_SESSION_IDLE_WEB": "10m"})
	var skew atomic.Int64
	env.Store.SetClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	ada := signIn(t, env, env.Member(env.Account.ID, "ada", core.RoleOwner))
	bob := signIn(t, env, env.Member(env.Account.ID, "bob", core.RoleMember))
	for _, step := range []time.Duration{8 * time.Minute, 8 * time.Minute} {
		skew.Add(int64(step))
		if !ada.signedIn() {
			t.Fatalf("ada, active every 8 minutes, was signed out at +%s", time.Duration(skew.Load()))
		}
	}
	if bob.signedIn() {
		t.Fatalf("bob, idle for %s with an idle time of 10m, is still signed in", time.Duration(skew.Load()))
	}
}

// Sign out everywhere ends every session of the person, and no one else's.
func TestSignOutEverywhere(t *testing.T) {
	f := newFixture(t, apptest.SQLite)
	phone, laptop := signIn(t, f.env, f.member), signIn(t, f.env, f.member)
	other := signIn(t, f.env, f.other)
	_, page := laptop.get("/devices")
	form := one(t, parseHTML(t, page), "sign-out-everywhere")
	if forms := elements(form, func(n *html.Node) bool { return n.Data == "form" }); len(forms) != 1 || attrOf(forms[0], "action") != "/signout/everywhere" || attrOf(forms[0], "method") != "post" {
		t.Fatalf("the devices page has no form posting to /signout/everywhere")
	}
	res, _ := laptop.post("/signout/everywhere", nil, true)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin" {
		t.Fatalf("POST /signout/everywhere: HTTP %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if phone.signedIn() || laptop.signedIn() {
		t.Fatalf("a session of bob lives on after sign out everywhere: phone %t, laptop %t", phone.signedIn(), laptop.signedIn())
	}
	if !other.signedIn() {
		t.Fatalf("cy was signed out by bob's sign out everywhere")
	}
}

// A removed member's open live timeline closes within a second, and their
// sessions are gone.
func TestARemovedMembersStreamCloses(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		// The removal is made at once: the rule that asks two people for it
		// is off (TestWhoDecidesIsChangedOnlyByTwoPeople has it on).
		if err := f.env.Store.RemoveRule(context.Background(), f.env.Account.ID, rules.RuleMemberChange, "cli:test"); err != nil {
			t.Fatal(err)
		}
		ask := f.ask(t, "Watched", "bob")
		bob, admin := signIn(t, f.env, f.member), signIn(t, f.env, f.admin)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.env.URL+"/approvals/"+ask.ID+"/events", nil)
		res, err := bob.client.Do(req)
		if err != nil {
			t.Fatalf("open stream: %v", err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("stream: HTTP %d", res.StatusCode)
		}
		events := make(chan sseEvent, 16)
		go readEvents(bufio.NewReader(res.Body), events)
		for ev := range events {
			if ev.event == "timeline" {
				break // the stream is live: it has sent the ask's first event
			}
		}
		if r, _ := admin.post("/admin/members/"+f.member.ID+"/remove", nil, true); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("remove bob: HTTP %d", r.StatusCode)
		}
		removed := time.Now()
		for range events {
		}
		// The stream hears the removal on the change feed at once; 1.5 s
		// against the 1 s allows for a loaded machine.
		if took := time.Since(removed); took > 1500*time.Millisecond || ctx.Err() != nil {
			t.Fatalf("the stream ended %s after bob's removal, want within 1 s", took)
		}
		if bob.signedIn() {
			t.Fatalf("bob's session lives on after his removal")
		}
	})
}
