package browsertest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

// swapAuthenticator takes the page's virtual authenticator away and puts a
// new, empty one in its place, as unplugging one security key and plugging
// in another would.
func swapAuthenticator(p *Page) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, webauthn.RemoveVirtualAuthenticator, webauthn.RemoveVirtualAuthenticatorParams{AuthenticatorID: p.Authenticator}); err != nil {
		p.Fatalf("WebAuthn.removeVirtualAuthenticator: %v", err)
	}
	opts := AuthenticatorOptions
	res, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &opts})
	if err != nil {
		p.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	p.Authenticator = res.AuthenticatorID
}

// confirmWithPasskey presses "Add a passkey" on the devices page and waits
// for the passkey's confirmation to grant an addition.
func confirmWithPasskey(p *Page) {
	p.t.Helper()
	p.Go("/devices")
	p.Click("[data-testid=add-passkey]")
	p.WaitVisible("[data-testid=device-grant]")
}

func TestAPersonAddsAPasskeyOnAPhoneThroughALinkAndAnotherOnTheMacAfterConfirmingWithOne(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		ctx := context.Background()
		mac := s.page
		ada := s.signUp("ada", core.RoleOwner)
		keys := func() []people.DeviceKey {
			t.Helper()
			k, err := s.env.Store.DeviceKeys(ctx, ada.ID)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		first := keys()[0]
		macCredential := base64.RawURLEncoding.EncodeToString(mac.Credentials()[0].CredentialID)
		if first.ID != macCredential {
			t.Fatalf("ada's first passkey %s is not the Mac's %s", first.ID, macCredential)
		}

		// On the Mac: confirm with its passkey, then make a link for the phone.
		confirmWithPasskey(mac)
		if by := mac.Text("[data-grant-by]"); by != first.Name {
			t.Errorf("the grant names %q, want the Mac's passkey %q", by, first.Name)
		}
		mac.Click("[data-testid=make-device-link]")
		mac.WaitVisible("[data-testid=device-link]")
		link := Eval[string](mac, `document.getElementById("device_link").value`)
		if !strings.HasPrefix(link, s.env.URL+"/add-device/") {
			mac.Fatalf("the link is %q", link)
		}

		// On the phone, with no session: open the link, make a passkey, land signed in.
		phone := browser.Open(t, s.env.URL)
		t.Cleanup(func() {
			var errs []string
			for _, e := range phone.ConsoleErrors() {
				// The used link's page answers 409 on purpose, below.
				if !strings.Contains(e, "status of 409") || !strings.Contains(e, "/add-device/") {
					errs = append(errs, e)
				}
			}
			if len(errs) > 0 {
				t.Errorf("the phone's pages reported errors in the browser console:\n  %s", strings.Join(errs, "\n  "))
			}
		})
		phone.Go(strings.TrimPrefix(link, s.env.URL))
		phone.Type("#device_name", "Phone")
		phone.ClickToLoad("[data-testid=register-device]", "/", "[data-testid=sign-out]")
		if title := phone.Attr("[data-testid=sign-out]", "title"); title != "Signed in as ada" {
			t.Errorf("the phone is signed in as %q", title)
		}
		phoneCreds := phone.Credentials()
		if len(phoneCreds) != 1 {
			t.Fatalf("the phone's authenticator holds %d passkeys, want 1", len(phoneCreds))
		}
		phoneID := base64.RawURLEncoding.EncodeToString(phoneCreds[0].CredentialID)
		// The link worked once.
		phone.Go(strings.TrimPrefix(link, s.env.URL))
		if n := phone.Count("#device-link"); n != 0 || !strings.Contains(phone.Text("main"), "used already") {
			phone.Fatalf("a used link still offers to add a passkey, or does not say it was used")
		}

		// Back on the Mac: the phone's passkey is listed as added by the Mac's.
		mac.Go("/devices")
		if got := mac.Text(`[data-device="` + phoneID + `"] [data-field=added-by]`); got != first.Name {
			t.Errorf("the phone's passkey shows added by %q, want %q", got, first.Name)
		}
		if got := mac.Text(`[data-device="` + first.ID + `"] [data-field=added-by]`); got != "first passkey, from the invite" {
			t.Errorf("the first passkey shows added by %q", got)
		}

		// On the Mac again: confirm with its passkey, then plug in a security
		// key and make the new passkey on it.
		confirmWithPasskey(mac)
		swapAuthenticator(mac)
		mac.Type("#new_device_name", "Security key")
		mac.ClickToLoad("[data-testid=add-passkey-here]", "/devices", "[data-testid=add-passkey]")
		if flash := mac.Text("main"); !strings.Contains(flash, "Passkey added.") {
			t.Errorf("the notice reads %q", flash)
		}
		all := keys()
		if len(all) != 3 || all[2].Name != "Security key" || all[2].AddedBy != first.ID || all[1].ID != phoneID || all[1].AddedBy != first.ID {
			t.Fatalf("ada's passkeys = %+v", all)
		}
		keyID := base64.RawURLEncoding.EncodeToString(mac.Credentials()[0].CredentialID)
		if all[2].ID != keyID {
			t.Fatalf("the stored passkey %s is not the security key's %s", all[2].ID, keyID)
		}
		if got := mac.Text(`[data-device="` + keyID + `"] [data-field=added-by]`); got != first.Name {
			t.Errorf("the security key shows added by %q, want %q", got, first.Name)
		}
		events, _, err := s.env.Store.Audit(ctx, s.env.Account.ID, audit.AuditFilter{Step: people.StepPasskeyAdded})
		if err != nil || len(events) != 2 {
			t.Fatalf("passkey_added events: %d %v", len(events), err)
		}
	})
}

func TestAPersonRemovesASecondPasskeyBySigningWithAnotherOnTheDevicesPage(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		ctx := context.Background()
		mac := s.page
		ada := s.signUp("ada", core.RoleOwner)
		keys := func() []people.DeviceKey {
			t.Helper()
			k, err := s.env.Store.DeviceKeys(ctx, ada.ID)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		first := keys()[0]

		// Add a security key, then keep only it plugged in: the Mac's first
		// passkey is the second one ada has, and the security key signs its removal.
		confirmWithPasskey(mac)
		swapAuthenticator(mac)
		mac.Type("#new_device_name", "Security key")
		mac.ClickToLoad("[data-testid=add-passkey-here]", "/devices", "[data-testid=add-passkey]")
		security := base64.RawURLEncoding.EncodeToString(mac.Credentials()[0].CredentialID)
		if all := keys(); len(all) != 2 || all[1].ID != security {
			t.Fatalf("ada's passkeys before the removal = %+v", all)
		}
		counter := mac.Credentials()[0].SignCount

		Eval[bool](mac, `(window.confirm = () => true, true)`)
		mac.ClickToLoad(`[data-device="`+first.ID+`"] [data-testid=remove-passkey]`, "/devices", "[data-testid=add-passkey]")
		if flash := mac.Text("main"); !strings.Contains(flash, "Passkey removed.") {
			t.Errorf("the notice reads %q", flash)
		}
		if n := mac.Count(`[data-device="` + first.ID + `"]`); n != 0 {
			t.Errorf("the removed passkey is still listed")
		}
		if n := mac.Count(`[data-device="` + security + `"] [data-testid=remove-passkey]`); n != 0 {
			t.Errorf("the last passkey offers to be removed")
		}
		if all := keys(); len(all) != 1 || all[0].ID != security {
			t.Fatalf("ada's passkeys after the removal = %+v", all)
		}
		if after := mac.Credentials()[0].SignCount; after <= counter {
			t.Errorf("the security key did not sign: its counter went from %v to %v", counter, after)
		}
		events, _, err := s.env.Store.Audit(ctx, s.env.Account.ID, audit.AuditFilter{Step: people.StepPasskeyRemoved})
		if err != nil || len(events) != 1 || events[0].Data == nil {
			t.Fatalf("passkey_removed events: %+v %v", events, err)
		}
		var data map[string]string
		if err := json.Unmarshal([]byte(*events[0].Data), &data); err != nil || data["credential_id"] != first.ID || data["removed_by"] != security {
			t.Errorf("the passkey_removed event says %s", *events[0].Data)
		}
	})
}
