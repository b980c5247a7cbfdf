package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

func TestTheAskPageOffersAnswersOnlyToWhoMayDecide(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		a := f.ask(t, "Merge <b>the</b> design", "bob")
		cases := []struct {
			who     string
			m       *people.Member
			buttons bool
		}{
			{"the person it is asked of", f.member, true},
			{"an owner it is not asked of", f.owner, false},
			{"another member", f.other, false},
		}
		for _, tc := range cases {
			t.Run(tc.who, func(t *testing.T) {
				res, body := signIn(t, f.env, tc.m).get("/approvals/" + a.ID)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("GET ask: %d", res.StatusCode)
				}
				if strings.Contains(body, "<b>the</b>") || !strings.Contains(body, "Merge &lt;b&gt;the&lt;/b&gt; design") {
					t.Fatalf("the title is not escaped text")
				}
				doc := parseHTML(t, body)
				if s := elements(doc, byAttr("data-testid", "status")); len(s) != 1 || attrOf(s[0], "data-status") != "pending" {
					t.Fatalf("no status pending")
				}
				if n := len(elements(doc, byAttr("data-approval", a.ID))); n != 1 {
					t.Fatalf("%d sections with data-approval", n)
				}
				approve := elements(doc, byAttr("data-testid", "approve"))
				if got := len(approve) == 1; got != tc.buttons {
					t.Fatalf("approve button shown: %t, want %t", got, tc.buttons)
				}
				if !strings.Contains(body, "I merge the design") || !strings.Contains(body, "The design waits") {
					t.Fatalf("approve and deny means are not shown")
				}
				hash := elements(doc, byAttr("data-testid", "payload-sha256"))
				if len(hash) != 1 || textOf(hash[0]) != a.PayloadSHA256 {
					t.Fatalf("the payload hash is not shown")
				}
				if live := elements(doc, func(n *html.Node) bool { return attrOf(n, "data-live") != "" }); len(live) != 1 ||
					!strings.HasPrefix(attrOf(live[0], "data-live"), "/approvals/"+a.ID+"/events") {
					t.Fatalf("no live timeline")
				}
			})
		}
	})
}

func TestAnotherAccountCannotSeeAnAsk(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		a := f.ask(t, "Secret design", "bob")
		proofJSON := `{"version":1,"decision":"deny"}`
		if _, err := f.env.Store.Decide(ctx, f.env.Account.ID, a.ID, f.member, asks.Decision{Verdict: asks.VerdictDeny, Proof: []byte(proofJSON)}); err != nil {
			t.Fatalf("deny: %v", err)
		}
		acct, err := f.env.Store.CreateAccount(ctx, "elsewhere")
		if err != nil {
			t.Fatal(err)
		}
		eve := f.env.Member(acct.ID, "eve", core.RoleOwner)

		for _, path := range []string{"/approvals/" + a.ID, "/approvals/" + a.ID + "/events", "/approvals/" + a.ID + "/proof.json"} {
			t.Run("an owner of another account gets 404 on "+strings.Replace(path, a.ID, "ID", 1), func(t *testing.T) {
				res, body := signIn(t, f.env, eve).get(path)
				if res.StatusCode != http.StatusNotFound {
					t.Fatalf("GET %s: %d", path, res.StatusCode)
				}
				if strings.Contains(body, "Secret design") || strings.Contains(body, a.PayloadSHA256) {
					t.Fatalf("the 404 shows the ask")
				}
			})
		}
		t.Run("a member of the account downloads the proof", func(t *testing.T) {
			res, body := signIn(t, f.env, f.other).get("/approvals/" + a.ID + "/proof.json")
			if res.StatusCode != http.StatusOK || body != proofJSON {
				t.Fatalf("proof.json: %d %q", res.StatusCode, body)
			}
			_, page := signIn(t, f.env, f.other).get("/approvals/" + a.ID)
			proof := elements(parseHTML(t, page), byAttr("data-testid", "proof"))
			if len(proof) != 1 || attrOf(proof[0], "href") != "/approvals/"+a.ID+"/proof.json" {
				t.Fatalf("no Download proof link on a decided ask")
			}
		})
	})
}

// sseEvent is one event read from a stream.
type sseEvent struct {
	id, event, data string
}

// readEvents reads a Server-Sent Events stream into events until it ends.
func readEvents(body *bufio.Reader, out chan<- sseEvent) {
	defer close(out)
	var ev sseEvent
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "retry: "):
			out <- sseEvent{event: "retry"}
		}
	}
}

func TestTheLiveTimelineDeliversEventsThatLandAfterItOpened(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		cases := []struct {
			name   string
			resume func(createdSeq string) (header, query string)
			first  string // the step of the first timeline event the stream sends
		}{
			{"from ?after= the last event shown", func(seq string) (string, string) { return "", "?after=" + seq }, "denied"},
			{"from Last-Event-ID when the browser reconnects", func(seq string) (string, string) { return seq, "?after=0" }, "denied"},
			{"from the start", func(string) (string, string) { return "", "" }, "created"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ask := f.ask(t, "Live", "bob")
				created, err := f.env.Store.Timeline(context.Background(), f.env.Account.ID, ask.ID)
				if err != nil || len(created) != 1 {
					t.Fatalf("timeline before: %v %v", created, err)
				}
				header, query := tc.resume(strconv.FormatInt(created[0].Seq, 10))
				b := signIn(t, f.env, f.member)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.env.URL+"/approvals/"+ask.ID+"/events"+query, nil)
				if header != "" {
					req.Header.Set("Last-Event-ID", header)
				}
				res, err := b.client.Do(req)
				if err != nil {
					t.Fatalf("open stream: %v", err)
				}
				defer res.Body.Close()
				if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
				}
				events := make(chan sseEvent, 16)
				go readEvents(bufio.NewReader(res.Body), events)
				next := func() sseEvent {
					t.Helper()
					select {
					case ev, ok := <-events:
						if !ok {
							t.Fatalf("the stream ended")
						}
						return ev
					case <-ctx.Done():
						t.Fatalf("no event before the timeout")
					}
					return sseEvent{}
				}
				if ev := next(); ev.event != "retry" {
					t.Fatalf("first = %+v, want the retry hint", ev)
				}
				if tc.first == "created" {
					ev := next()
					var d map[string]any
					if err := json.Unmarshal([]byte(ev.data), &d); err != nil || ev.event != "timeline" || d["step"] != "created" || d["actor"] != "agent:bot" || d["by"] != "agent" || d["to"] != "pending" {
						t.Fatalf("first timeline event = %+v", ev)
					}
				}
				decided, err := f.env.Store.Decide(context.Background(), f.env.Account.ID, ask.ID, f.member, asks.Decision{Verdict: asks.VerdictDeny, Note: "not now"})
				if err != nil {
					t.Fatalf("deny: %v", err)
				}
				tl, err := f.env.Store.Timeline(context.Background(), f.env.Account.ID, ask.ID)
				if err != nil {
					t.Fatal(err)
				}
				last := tl[len(tl)-1]
				ev := next()
				if ev.event != "timeline" || ev.id != strconv.FormatInt(last.Seq, 10) {
					t.Fatalf("event = %+v, want timeline id %d", ev, last.Seq)
				}
				var d struct {
					Seq                             int64
					At                              time.Time
					Actor, By, Step, From, To, Note string
				}
				if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
					t.Fatalf("data %q: %v", ev.data, err)
				}
				if d.Seq != last.Seq || d.Actor != "bob" || d.By != "person" || d.Step != "denied" || d.From != "pending" ||
					d.To != string(decided.Status) || d.Note != "not now" || !d.At.Equal(last.At) {
					t.Fatalf("data = %+v, want the deny by bob at seq %d", d, last.Seq)
				}
			})
		}
	})
}
