package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

// removeSigned removes the passkey id in b's session, confirmed with b's
// passkey: the answer of the finish call, or of the begin call when it refused.
func removeSigned(b *apptest.Browser, id string) apptest.Response {
	begin := b.Post("/devices/"+id+"/remove/begin", map[string]any{})
	if begin.Status != http.StatusOK {
		return begin
	}
	ceremony, options := begin.Ceremony()
	return b.Post("/devices/"+id+"/remove", map[string]any{"ceremony": ceremony, "credential": b.Sign(options)})
}

// beginRemoval starts a prompt in b's session to remove the passkey id; it must start.
func beginRemoval(t *testing.T, b *apptest.Browser, id string) (ceremony string, options json.RawMessage) {
	t.Helper()
	begin := b.Post("/devices/"+id+"/remove/begin", map[string]any{})
	if begin.Status != http.StatusOK {
		t.Fatalf("begin the removal of %s: %s", id, begin)
	}
	return begin.Ceremony()
}

// signAnyway answers request options with key even where they do not allow
// it, as a hostile client would: allowCredentials is dropped first.
func signAnyway(t *testing.T, key *apptest.Authenticator, origin string, options json.RawMessage) json.RawMessage {
	t.Helper()
	var o map[string]any
	if err := json.Unmarshal(options, &o); err != nil {
		t.Fatal(err)
	}
	delete(o, "allowCredentials")
	stripped, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	credential, err := key.Assert(origin, stripped)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return credential
}

// withPasskeys adds, through signed add-device grants, a passkey of each
// name to ada, and returns their authenticators.
func withPasskeys(t *testing.T, p *household, names ...string) []*apptest.Authenticator {
	t.Helper()
	var keys []*apptest.Authenticator
	for _, name := range names {
		key := apptest.NewAuthenticator()
		if r := addHere(t, p.ada, grantOf(t, authorise(p.ada)), key, name, ""); r.Status != http.StatusOK {
			t.Fatalf("add %s: %s", name, r)
		}
		keys = append(keys, key)
	}
	return keys
}

// signingWith is ada's browser (same session) holding key instead of her first passkey.
func signingWith(t *testing.T, b *apptest.Browser, key *apptest.Authenticator) *apptest.Browser {
	c := b.For(t)
	c.Passkey = key
	return c
}

// removals watches what a removal changes: ada's live passkeys, the
// passkey_removed events in both her accounts, the removal pushes to both
// her browsers.
type removals struct {
	p      *household
	keys   []string
	events [2]int
	pushes [2]int64
}

func watchRemovals(t *testing.T, p *household) *removals {
	t.Helper()
	r := &removals{p: p}
	r.keys = keyIDs(t, p.env, p.adaM.ID)
	for i, acct := range []string{p.env.Account.ID, p.second.ID} {
		r.events[i] = len(passkeyEvents(t, p.env, acct, people.StepPasskeyRemoved))
	}
	for i, endpoint := range []string{p.mac, p.phone} {
		r.pushes[i] = pushesTo(t, p.env, endpoint, people.PushPasskeyRemoved)
	}
	return r
}

// unchanged fails t if anything watched changed.
func (r *removals) unchanged(t *testing.T, what string) {
	t.Helper()
	now := watchRemovals(t, r.p)
	if !slices.Equal(now.keys, r.keys) || now.events != r.events || now.pushes != r.pushes {
		t.Fatalf("%s changed something: passkeys %v → %v, events %v → %v, pushes %v → %v", what, r.keys, now.keys, r.events, now.events, r.pushes, now.pushes)
	}
}

func TestACookieAloneCannotRemoveAPasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		key := withPasskeys(t, p, "Security key")[0].CredentialIDString()
		// The thief has ada's session cookie and CSRF token; not her passkeys.
		thief := p.ada.For(t)
		w := watchRemovals(t, p)
		if len(w.keys) != 2 {
			t.Fatalf("ada's passkeys: %v", w.keys)
		}

		t.Run("the attack as it was made: post the remove form with the cookie and the CSRF token", func(t *testing.T) {
			status, _, page := postForm(t, thief, "/devices/"+key+"/remove", url.Values{}, thief.CSRF)
			refusal := elements(parseHTML(t, page), byAttr("data-testid", "refusal"))
			if status != http.StatusForbidden || len(refusal) != 1 || !strings.Contains(textOf(refusal[0]), "takes a confirmation with one of your passkeys") {
				t.Fatalf("the form alone: HTTP %d\n%s", status, page)
			}
			for _, body := range []any{map[string]any{}, map[string]any{"ceremony": "", "credential": nil}, map[string]any{"credential": json.RawMessage(`{}`)}} {
				r := thief.Post("/devices/"+key+"/remove", body)
				if r.Status != http.StatusForbidden || r.Code() != "PERMISSION_DENIED" || r.Field() != "credential" ||
					!strings.Contains(r.Body["message"].(string), "takes a confirmation with one of your passkeys") {
					t.Fatalf("a script's post of %v: %s", body, r)
				}
			}
			w.unchanged(t, "a removal with the cookie alone")
		})
		t.Run("a prompt the session began is no use without one of ada's passkeys", func(t *testing.T) {
			ceremony, _ := beginRemoval(t, thief, key)
			if r := thief.Post("/devices/"+key+"/remove", map[string]any{"ceremony": ceremony, "credential": json.RawMessage(`{}`)}); r.Status != http.StatusForbidden {
				t.Fatalf("an empty credential: %s", r)
			}
			// A passkey that is not ada's, claiming her first passkey's id and her user handle.
			ceremony, options := beginRemoval(t, thief, key)
			forger := apptest.NewAuthenticator()
			forger.CredentialID, forger.UserHandle, forger.RPID = p.ada.Passkey.CredentialID, []byte(p.adaM.ID), "localhost"
			credential, err := forger.Assert(thief.Origin, options)
			if err != nil {
				t.Fatal(err)
			}
			if r := thief.Post("/devices/"+key+"/remove", map[string]any{"ceremony": ceremony, "credential": json.RawMessage(credential)}); r.Status != http.StatusForbidden {
				t.Fatalf("a forged assertion: %s", r)
			}
			w.unchanged(t, "a removal without ada's passkey")
		})
	})
}

func TestARemovalIsRefusedUnlessSignedByALivePasskeyOfThePersonForThatPasskeyInThisSessionOnceWithinFiveMinutes(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		ctx := context.Background()
		ada := p.ada
		first := ada.Passkey.CredentialIDString()
		keys := withPasskeys(t, p, "Security key", "Old phone")
		security, old := keys[0], keys[1]
		target := security.CredentialIDString()
		finish := func(b *apptest.Browser, id, ceremony string, credential json.RawMessage) apptest.Response {
			return b.Post("/devices/"+id+"/remove", map[string]any{"ceremony": ceremony, "credential": credential})
		}

		// A prompt begun while the old phone's passkey was live; then it is removed, signed by the first.
		pending, pendingOptions := beginRemoval(t, ada, target)
		if r := removeSigned(ada, old.CredentialIDString()); r.Status != http.StatusOK {
			t.Fatalf("remove the old phone: %s", r)
		}
		w := watchRemovals(t, p)
		if !slices.Equal(w.keys, []string{first, target}) || w.events != [2]int{1, 1} || w.pushes != [2]int64{1, 1} {
			t.Fatalf("after removing the old phone: %+v", w)
		}

		cases := []struct {
			name   string
			try    func(t *testing.T) apptest.Response
			status int
			says   string // in the refusal's message
		}{
			{"a removed passkey cannot sign, on a prompt begun while it was live", func(t *testing.T) apptest.Response {
				return finish(ada.For(t), target, pending, signingWith(t, ada, old).Sign(pendingOptions))
			}, http.StatusForbidden, "not accepted"},
			{"a removed passkey cannot sign a prompt begun since", func(t *testing.T) apptest.Response {
				ceremony, options := beginRemoval(t, ada.For(t), target)
				return finish(ada.For(t), target, ceremony, signAnyway(t, old, ada.Origin, options))
			}, http.StatusForbidden, "not accepted"},
			{"another person's passkey cannot sign", func(t *testing.T) apptest.Response {
				ceremony, options := beginRemoval(t, ada.For(t), target)
				return finish(ada.For(t), target, ceremony, signAnyway(t, p.bob.Passkey, ada.Origin, options))
			}, http.StatusForbidden, "not accepted"},
			{"a prompt for another passkey removes not this one", func(t *testing.T) apptest.Response {
				ceremony, options := beginRemoval(t, ada.For(t), first)
				return finish(ada.For(t), target, ceremony, ada.For(t).Sign(options))
			}, http.StatusForbidden, "made to remove another passkey"},
			{"a signature made to remove another passkey does not stand in", func(t *testing.T) apptest.Response {
				_, options := beginRemoval(t, ada.For(t), first)
				signed := ada.For(t).Sign(options)
				ceremony, _ := beginRemoval(t, ada.For(t), target)
				return finish(ada.For(t), target, ceremony, signed)
			}, http.StatusForbidden, "not accepted"},
			{"an add-device assertion does not stand in", func(t *testing.T) apptest.Response {
				begin := ada.For(t).Post("/devices/authorise/begin", map[string]any{})
				_, options := begin.Ceremony()
				ceremony, _ := beginRemoval(t, ada.For(t), target)
				return finish(ada.For(t), target, ceremony, ada.For(t).Sign(options))
			}, http.StatusForbidden, "not accepted"},
			{"an add-device prompt is not a removal prompt", func(t *testing.T) apptest.Response {
				begin := ada.For(t).Post("/devices/authorise/begin", map[string]any{})
				ceremony, options := begin.Ceremony()
				return finish(ada.For(t), target, ceremony, ada.For(t).Sign(options))
			}, http.StatusConflict, "expired or was used"},
			{"a prompt works in no other session of ada's", func(t *testing.T) apptest.Response {
				ceremony, options := beginRemoval(t, ada.For(t), target)
				other := p.env.Browser()
				token, err := p.env.Store.CreateSession(ctx, p.adaM.ID, p.env.Account.ID)
				if err != nil {
					t.Fatal(err)
				}
				setSession(t, other, token)
				m := csrfMeta.FindStringSubmatch(string(other.Get("/devices").Raw))
				if m == nil {
					t.Fatal("no csrf-token meta on the other session's devices page")
				}
				other.CSRF = m[1]
				return finish(other, target, ceremony, ada.For(t).Sign(options))
			}, http.StatusForbidden, "made in another session"},
			{"a prompt works once", func(t *testing.T) apptest.Response {
				ceremony, options := beginRemoval(t, ada.For(t), target)
				if r := finish(ada.For(t), first, ceremony, json.RawMessage(`{}`)); r.Status != http.StatusForbidden {
					t.Fatalf("spend the prompt on the wrong passkey: %s", r)
				}
				return finish(ada.For(t), target, ceremony, ada.For(t).Sign(options))
			}, http.StatusConflict, "expired or was used"},
			{"a prompt lasts five minutes", func(t *testing.T) apptest.Response {
				ceremony, options := beginRemoval(t, ada.For(t), target)
				signed := ada.For(t).Sign(options)
				later := time.Now().Add(5*time.Minute + time.Second)
				p.env.Store.SetClock(func() time.Time { return later })
				defer p.env.Store.SetClock(time.Now)
				return finish(ada.For(t), target, ceremony, signed)
			}, http.StatusConflict, "expired or was used"},
			{"a passkey must verify its user", func(t *testing.T) apptest.Response {
				ceremony, options := beginRemoval(t, ada.For(t), target)
				ada.Passkey.Misbehave.NoUserVerification = true
				defer func() { ada.Passkey.Misbehave.NoUserVerification = false }()
				return finish(ada.For(t), target, ceremony, ada.For(t).Sign(options))
			}, http.StatusForbidden, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := tc.try(t)
				if msg, _ := r.Body["message"].(string); r.Status != tc.status || !strings.Contains(msg, tc.says) {
					t.Fatalf("%s, want HTTP %d saying %q", r, tc.status, tc.says)
				}
				w.unchanged(t, tc.name)
			})
		}
		// After all that, a fresh signed prompt still works.
		if r := removeSigned(ada, target); r.Status != http.StatusOK {
			t.Fatalf("a signed removal after the refusals: %s", r)
		}
	})
}

func TestASignedRemovalRemovesThePasskeyNamesItsSignerAndTellsTheOtherDevices(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		p := newPeople(t, db)
		ctx := context.Background()
		ada := p.ada
		first := ada.Passkey.CredentialIDString()
		keys := withPasskeys(t, p, "Security key", "Old phone")
		security, old := keys[0], keys[1]

		// The first passkey signs the old phone's removal.
		ceremony, options := beginRemoval(t, ada, old.CredentialIDString())
		signed := ada.Sign(options)
		r := ada.Post("/devices/"+old.CredentialIDString()+"/remove", map[string]any{"ceremony": ceremony, "credential": signed})
		if r.Status != http.StatusOK || r.Body["redirect"] != "/devices" {
			t.Fatalf("remove: %s", r)
		}
		if ids := keyIDs(t, p.env, p.adaM.ID); !slices.Equal(ids, []string{first, security.CredentialIDString()}) {
			t.Fatalf("ada's passkeys after the removal: %v", ids)
		}
		if k, _ := p.env.Store.DeviceKeyByID(ctx, first); k == nil || k.SignCount != int64(ada.Passkey.Counter) {
			t.Fatalf("the signing passkey's counter was not recorded: %+v (authenticator at %d)", k, ada.Passkey.Counter)
		}
		for _, acct := range []string{p.env.Account.ID, p.second.ID} {
			events := passkeyEvents(t, p.env, acct, people.StepPasskeyRemoved)
			if len(events) != 1 {
				t.Fatalf("account %s has %d passkey_removed events", acct, len(events))
			}
			e := events[0]
			var data map[string]string
			if e.Data != nil {
				_ = json.Unmarshal([]byte(*e.Data), &data)
			}
			if e.ApprovalID != "" || e.ActorKind != asks.ActorPerson || e.Actor != "ada" || e.Note != `passkey "Old phone" removed, authorised by passkey "test passkey"` ||
				data["credential_id"] != old.CredentialIDString() || data["removed_by"] != first || data["removed_by_name"] != "test passkey" {
				t.Fatalf("the event in %s: %+v %v", acct, e, data)
			}
		}
		for _, endpoint := range []string{p.mac, p.phone} {
			if got := pushesTo(t, p.env, endpoint, people.PushPasskeyRemoved); got != 1 {
				t.Fatalf("removal pushes to %s: %d, want 1", endpoint, got)
			}
		}
		page := ada.Get("/devices")
		if !strings.Contains(string(page.Raw), "Passkey removed.") || strings.Contains(string(page.Raw), old.CredentialIDString()) {
			t.Fatalf("the devices page does not show the notice, or still lists the old phone:\n%s", page.Raw)
		}
		w := watchRemovals(t, p)
		if r := ada.Post("/devices/"+old.CredentialIDString()+"/remove", map[string]any{"ceremony": ceremony, "credential": signed}); r.Status != http.StatusConflict {
			t.Fatalf("the same signed removal again: %s", r)
		}
		w.unchanged(t, "a replayed removal")

		// A prompt to remove the first passkey, begun while ada has two…
		lastCeremony, lastOptions := beginRemoval(t, ada, first)
		// …then the security key signs its own removal…
		if r := removeSigned(signingWith(t, ada, security), security.CredentialIDString()); r.Status != http.StatusOK {
			t.Fatalf("a passkey signing its own removal: %s", r)
		}
		if events := passkeyEvents(t, p.env, p.env.Account.ID, people.StepPasskeyRemoved); len(events) != 2 ||
			events[1].Note != `passkey "Security key" removed, authorised by passkey "Security key"` {
			t.Fatalf("passkey_removed events: %+v", events)
		}
		// …and the first, now the last, stays: at the prompt, and on the prompt begun before.
		w = watchRemovals(t, p)
		if r := removeSigned(ada, first); r.Status != http.StatusConflict || !strings.Contains(r.Body["message"].(string), "last passkey") {
			t.Fatalf("a prompt to remove the last passkey: %s", r)
		}
		// (go-webauthn refuses a prompt whose allowed passkeys include one removed since.)
		r = ada.Post("/devices/"+first+"/remove", map[string]any{"ceremony": lastCeremony, "credential": ada.Sign(lastOptions)})
		if r.Status != http.StatusForbidden {
			t.Fatalf("removing the last passkey on a prompt begun before: %s", r)
		}
		w.unchanged(t, "removing the last passkey")
		sealAndVerify(t, p.env, p.env.Account.ID)
		sealAndVerify(t, p.env, p.second.ID)
	})
}
