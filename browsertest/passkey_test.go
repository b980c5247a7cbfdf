package browsertest

import (
	"bytes"
	"context"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

func TestAPersonJoinsWithAPasskeySignsOutAndSignsInAgain(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		p := s.page

		p.Go(s.invite(core.RoleAdmin, ""))
		if got := p.Attr("#register", "data-invite"); got == "" {
			p.Fatalf("the invite page has no registration form")
		}
		p.Type("#subject", "ada")
		p.ClickToLoad("[data-testid=register-passkey]", "/", "[data-testid=sign-out]")
		s.checkInbox()

		m, err := s.env.Store.MemberBySubject(context.Background(), s.env.Account.ID, "ada")
		if err != nil {
			t.Fatalf("ada is not a member after accepting the invite: %v", err)
		}
		if m.Role != core.RoleAdmin {
			t.Errorf("ada's role = %q, want admin", m.Role)
		}
		creds := p.Credentials()
		if len(creds) != 1 || !creds[0].IsResidentCredential || creds[0].RpID != "localhost" {
			t.Fatalf("the authenticator holds %d credentials (%+v), want one discoverable credential for localhost", len(creds), creds)
		}
		export := s.keys()
		if len(export.Keys) != 1 || export.Keys[0].Person != "ada" || !bytes.Equal(export.Keys[0].CredentialID, creds[0].CredentialID) {
			t.Fatalf("exported device keys = %+v, want ada's one passkey, the browser's", export.Keys)
		}
		registered := creds[0].SignCount

		// The button, as in a browser without passkey autofill.
		undo := p.WithoutPasskeyAutofill()
		p.ClickToLoad("[data-testid=sign-out]", "/signin", "[data-testid=sign-in]")
		p.Go("/")
		if path := p.Path(); path != "/signin" {
			p.Fatalf("after sign-out / shows %s, want the sign-in page", path)
		}

		p.ClickToLoad("[data-testid=sign-in]", "/", "[data-testid=sign-out]")
		s.checkInbox()
		if title := p.Attr("[data-testid=sign-out]", "title"); title != "Signed in as ada" {
			t.Errorf("sign-out button title = %q, want %q", title, "Signed in as ada")
		}
		signedIn := signCount(t, p)
		if signedIn <= registered {
			t.Fatalf("after sign-in the passkey's sign count is %v (registered at %v): it did not sign", signedIn, registered)
		}

		// Passkey autofill (conditional mediation), where the browser has
		// it: the sign-in page offers the passkey at once, and the virtual
		// authenticator accepts the offer without a click.
		undo()
		p.ClickToLoad("[data-testid=sign-out]", "/", "[data-testid=sign-out]")
		s.checkInbox()
		if n := signCount(t, p); n <= signedIn {
			t.Errorf("after the autofill sign-in the passkey's sign count is %v (was %v): it did not sign", n, signedIn)
		}
	})
}

// signCount is the counter of the browser's one passkey.
func signCount(t *testing.T, p *Page) float64 {
	t.Helper()
	creds := p.Credentials()
	if len(creds) != 1 {
		t.Fatalf("the authenticator holds %d credentials, want 1", len(creds))
	}
	return creds[0].SignCount
}

func TestAPersonAcceptsAnAddRoleInviteBySigningInWithTheirPasskey(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		p := s.page
		ctx := context.Background()
		dave := s.signUp("dave", core.RoleOwner)
		bravo, err := s.env.Store.CreateAccount(ctx, "bravo")
		if err != nil {
			t.Fatal(err)
		}
		token, _, err := s.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: bravo.ID, Kind: people.InviteAddRole,
			Role: core.RoleAdmin, Subject: "dave", By: people.OperatorInviter("browsertest")})
		if err != nil {
			t.Fatal(err)
		}

		p.Go("/invite/" + token)
		if p.Count("#register") != 0 || p.Count("[data-testid=accept-invite]") != 1 {
			p.Fatalf("the add-role invite page shows a registration form, or no sign-in button")
		}
		before := signCount(t, p)
		p.ClickToLoad("[data-testid=accept-invite]", "/", "[data-testid=sign-out]")
		s.checkInbox()

		m, err := s.env.Store.MemberByID(ctx, bravo.ID, dave.ID)
		if err != nil || m.Role != core.RoleAdmin {
			t.Fatalf("dave in bravo: %+v (%v); want an admin", m, err)
		}
		if creds := p.Credentials(); len(creds) != 1 {
			t.Fatalf("the authenticator holds %d credentials, want dave's one: accepting made a passkey", len(creds))
		}
		keys, err := s.env.Store.DeviceKeys(ctx, dave.ID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("dave has %d passkeys (%v), want his one", len(keys), err)
		}
		if after := signCount(t, p); after <= before {
			t.Fatalf("the passkey's sign count is %v (was %v): it did not sign", after, before)
		}
	})
}
