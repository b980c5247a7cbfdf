package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/channels"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
)

// A kill -9 in the middle of a burst of 200 channel messages loses none and
// makes none twice: after a restart the webhook has received each ask's
// message, under one webhook-id per ask (the message's key), exactly the
// ids of the 200 asks. A message the killed process had sent but not yet
// recorded is sent again under the same webhook-id, which a Standard
// Webhooks receiver drops as a repeat; the test counts those too.
func TestKillNineDuringABurstOfMessagesLosesNoneAndMakesNoneTwice(t *testing.T) {
	var (
		mu    sync.Mutex
		byID  = map[string]string{} // webhook-id → approval id
		times = map[string]int{}    // webhook-id → deliveries
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev channels.WebhookEvent
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		time.Sleep(5 * time.Millisecond) // a receiver that takes a moment: messages are in flight at the kill
		mu.Lock()
		byID[r.Header.Get("webhook-id")] = ev.Data.ApprovalID
		times[r.Header.Get("webhook-id")]++
		mu.Unlock()
	}))
	defer hook.Close()
	u, _ := url.Parse(hook.URL)
	settings := map[string]string{"COUNTERSIGN_ASK_RATE": "100000/s", "COUNTERSIGN_ASK_BURST": "100000",
		"COUNTERSIGN_CHANNEL_PRIVATE_HOSTS": u.Host, "COUNTERSIGN_CHANNEL_RETRY": "10ms"}
	s := startServer(t, apptest.SQLite, settings)
	created := mustCLI(t, s.env, "agent", "create", "--name", "burst", "--scopes", strings.Join(people.AllScopes, ","))
	lines := strings.Split(strings.TrimSpace(created.stdout), "\n")
	token := lines[len(lines)-1]
	ctx := context.Background()
	store, err := app.OpenStore(ctx, mustConfig(t, s.env), apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	acct, err := store.AccountByName(ctx, people.DefaultAccountName)
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := json.Marshal(channels.Secret{URL: hook.URL + "/hook", SigningSecret: channels.NewSigningSecret()})
	if err := store.SaveSharedChannel(ctx, outbox.SharedChannel{AccountID: acct.ID, Name: "pager", Kind: outbox.ChannelWebhook, Settings: "{}", Secret: string(secret), EveryAsk: true}); err != nil {
		t.Fatal(err)
	}

	const asks = 200
	var filed []string
	var fmu sync.Mutex
	var wg sync.WaitGroup
	for c := range 8 {
		session, err := apptest.Connect(ctx, s.URL+"/mcp", token)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for n := range asks / 8 {
				r, err := apptest.CallTool(ctx, session, "approvals_create", pullRequestAsk(c, n))
				if err != nil || r.IsError {
					t.Errorf("file: %v %s", err, r.Text)
					return
				}
				fmu.Lock()
				filed = append(filed, r.Out["approval_id"].(string))
				fmu.Unlock()
			}
		})
	}
	wg.Wait()
	received := func() int { mu.Lock(); defer mu.Unlock(); return len(times) }
	for deadline := time.Now().Add(time.Minute); received() < 20; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d messages within a minute", received())
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done
	atKill := received()
	if atKill >= asks {
		t.Fatalf("all %d messages were sent before the kill: the test killed nothing in the middle", atKill)
	}

	startServer(t, apptest.SQLite, s.env) // the same data folder, the same outbox
	for deadline := time.Now().Add(2 * time.Minute); received() < asks; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages after the restart", received(), asks)
		}
	}
	time.Sleep(300 * time.Millisecond) // a late duplicate would come now
	mu.Lock()
	defer mu.Unlock()
	perAsk := map[string]int{}
	repeats := 0
	for id, a := range byID {
		perAsk[a]++
		repeats += times[id] - 1
		if !strings.HasPrefix(id, "msg_appr_") {
			t.Errorf("webhook-id %q is not made from the message's key", id)
		}
	}
	for _, a := range filed {
		if perAsk[a] != 1 {
			t.Errorf("ask %s reached the webhook under %d ids, want 1", a, perAsk[a])
		}
	}
	if len(byID) != asks || len(filed) != asks {
		t.Errorf("%d webhook ids for %d asks filed, want %d each", len(byID), len(filed), asks)
	}
	t.Logf("%d of %d sent before the kill; %d sent again under the same webhook-id after it (a receiver drops those)", atKill, asks, repeats)
}
