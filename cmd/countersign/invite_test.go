package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/proof"
)

// exportedKeys runs `countersign keys export` for account and maps each
// exported credential id (base64url) to the person it is exported as.
func exportedKeys(t *testing.T, env *apptest.Env, account string) map[string]string {
	t.Helper()
	r := mustCLI(t, cliEnv(env), "keys", "export", "--account", account)
	var keys proof.Keys
	if err := json.Unmarshal([]byte(r.stdout), &keys); err != nil {
		t.Fatalf("keys export: %v\n%s", err, r)
	}
	out := map[string]string{}
	for _, k := range keys.Keys {
		id, err := json.Marshal(k.CredentialID)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.Trim(string(id), `"`)] = k.Person
	}
	return out
}

func TestTheInviteCommandNeverHandsAnExistingPersonANewPasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.StartWeb(t, db, nil)
		ctx := context.Background()
		bravo, err := env.Store.CreateAccount(ctx, "bravo")
		if err != nil {
			t.Fatal(err)
		}
		dave := apptest.NewBrowser(t, env.URL)
		if r := dave.AcceptInvite(inviteToken(t, env, "--role", "owner"), "dave"); r.Status != http.StatusOK {
			t.Fatalf("dave joins: %s", r)
		}
		daveKey := dave.Passkey.CredentialIDString()

		t.Run("an invite naming dave is refused in every account, pointing at --add-role", func(t *testing.T) {
			for _, account := range []string{"bravo", people.DefaultAccountName} {
				r := cli(t, cliEnv(env), "invite", "--role", "admin", "--subject", "dave", "--account", account)
				if r.code != 1 || strings.Contains(r.stdout, "/invite/") || !strings.Contains(r.stderr, "add-role") {
					t.Fatalf("invite naming dave in %s: %s; want exit 1, no URL, a pointer to add-role", account, r)
				}
			}
			if inv, err := env.Store.Invites(ctx, bravo.ID); err != nil || len(inv) != 0 {
				t.Fatalf("bravo has %d invites (%v)", len(inv), err)
			}
		})

		t.Run("a legacy invite naming dave is refused, and keys export lists no foreign key", func(t *testing.T) {
			token := "inv_legacy" + strings.ReplaceAll(people.NewPersonID(), "_", "")
			now := time.Now()
			if err := env.Store.DB().Exec(`INSERT INTO invites (token_hash, account_id, role, subject, created_by, created_at, expires_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, core.HashToken(token), bravo.ID, core.RoleOwner, "dave", "mallory", now, now.Add(time.Hour)).Error; err != nil {
				t.Fatal(err)
			}
			attacker := apptest.NewBrowser(t, env.URL)
			if r := attacker.AcceptInvite(token, "dave"); r.Status != http.StatusConflict || r.Field() != "subject" {
				t.Fatalf("accept: %s; want 409 on subject", r)
			}
			for _, account := range []string{people.DefaultAccountName, "bravo"} {
				for id, person := range exportedKeys(t, env, account) {
					if id == attacker.Passkey.CredentialIDString() || (person == "dave" && id != daveKey) {
						t.Fatalf("account %s exports key %s as %s's", account, id, person)
					}
				}
			}
		})

		t.Run("an add-role invite gives dave the role when he signs in with his own passkey", func(t *testing.T) {
			for _, args := range [][]string{{"--add-role", "--role", "member"}, {"--add-role", "--role", "member", "--subject", "nobody"}} {
				if r := cli(t, cliEnv(env), append(append([]string{"invite"}, args...), "--account", "bravo")...); r.code != 1 || strings.Contains(r.stdout, "/invite/") {
					t.Fatalf("invite %v: %s; want exit 1 and no URL", args, r)
				}
			}
			r := mustCLI(t, cliEnv(env), "invite", "--add-role", "--role", "admin", "--subject", "dave", "--account", "bravo")
			if !strings.Contains(r.stdout, "only dave can accept it") {
				t.Fatalf("invite --add-role says:\n%s", r)
			}
			token := inviteTokenOf(t, env, r)
			if r := dave.AcceptRoleInvite(token); r.Status != http.StatusOK {
				t.Fatalf("dave accepts: %s", r)
			}
			m, err := env.Store.MemberBySubject(ctx, bravo.ID, "dave")
			if err != nil || m.Role != core.RoleAdmin {
				t.Fatalf("dave in bravo: %+v (%v); want an admin", m, err)
			}
			keys := exportedKeys(t, env, "bravo")
			if len(keys) != 1 || keys[daveKey] != "dave" {
				t.Fatalf("bravo exports %v; want dave's one passkey", keys)
			}
		})
	})
}

// inviteTokenOf reads the token from the URL on the last line of an invite command's output.
func inviteTokenOf(t *testing.T, env *apptest.Env, r result) string {
	t.Helper()
	url := lastLine(r.stdout)
	token, ok := strings.CutPrefix(url, env.URL+"/invite/")
	if !ok || !strings.HasPrefix(token, "inv_") {
		t.Fatalf("the last line of stdout is %q, want %s/invite/inv_…\n%s", url, env.URL, r)
	}
	return token
}
