package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
)

func TestDevicesRenameAndRemoveButNeverTheLast(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		for _, k := range []models.DeviceKey{{ID: "cred-1", Name: "iPhone", Credential: "{}", PublicKey: "AQ", BackedUp: true}, {ID: "cred-2", Name: "Mac", Credential: "{}", PublicKey: "Ag"}} {
			if err := f.env.Store.AddDeviceKey(ctx, f.member.ID, k); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.env.Store.AddDeviceKey(ctx, f.other.ID, models.DeviceKey{ID: "cred-cy", Name: "Cy's phone", Credential: "{}", PublicKey: "Aw"}); err != nil {
			t.Fatal(err)
		}
		b := signIn(t, f.env, f.member)

		res, body := b.get("/devices")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /devices: %d", res.StatusCode)
		}
		doc := parseHTML(t, body)
		for _, id := range []string{"cred-1", "cred-2"} {
			if len(elements(doc, byAttr("data-device", id))) != 1 {
				t.Fatalf("passkey %s not listed", id)
			}
		}
		if len(elements(doc, byAttr("data-device", "cred-cy"))) != 0 {
			t.Fatalf("another person's passkey is listed")
		}
		if !strings.Contains(textOf(elements(doc, byAttr("data-device", "cred-1"))[0]), "yes") {
			t.Fatalf("the backed-up flag is not shown")
		}
		if len(elements(doc, byAttr("data-testid", "add-passkey"))) != 1 || len(elements(doc, byAttr("id", "new_device_name"))) != 1 {
			t.Fatalf("no add-passkey button and name field")
		}

		res, _ = b.post("/devices/cred-1/rename", url.Values{"name": {"Work phone"}}, true)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("rename: %d", res.StatusCode)
		}
		if k, _ := f.env.Store.DeviceKeyByID(ctx, "cred-1"); k.Name != "Work phone" {
			t.Fatalf("name = %q after rename", k.Name)
		}
		if res, _ := b.post("/devices/cred-cy/rename", url.Values{"name": {"Mine now"}}, true); res.StatusCode != http.StatusNotFound {
			t.Fatalf("renaming another person's passkey: %d", res.StatusCode)
		}
		if k, _ := f.env.Store.DeviceKeyByID(ctx, "cred-cy"); k.Name != "Cy's phone" {
			t.Fatalf("another person's passkey was renamed to %q", k.Name)
		}

		res, _ = b.post("/devices/cred-2/remove", nil, true)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("remove: %d", res.StatusCode)
		}
		res, body = b.post("/devices/cred-1/remove", nil, true)
		if res.StatusCode != http.StatusConflict {
			t.Fatalf("removing the last passkey: %d", res.StatusCode)
		}
		refusal := elements(parseHTML(t, body), byAttr("data-testid", "refusal"))
		if len(refusal) != 1 || !strings.Contains(textOf(refusal[0]), "last passkey") {
			t.Fatalf("the refusal is not shown")
		}
		keys, err := f.env.Store.DeviceKeys(ctx, f.member.ID)
		if err != nil || len(keys) != 1 || keys[0].ID != "cred-1" {
			t.Fatalf("passkeys after = %v %v", keys, err)
		}
	})
}

func TestAddingAPasskeyOnAnotherDevice(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		env := apptest.StartWeb(t, db, nil)
		ctx := context.Background()
		invite := func(subject string, role models.Role) (*apptest.Browser, *models.Member) {
			t.Helper()
			token, _, err := env.Store.CreateInvite(ctx, models.NewInvite{AccountID: env.Account.ID, Role: role, By: models.OperatorInviter("test")})
			if err != nil {
				t.Fatal(err)
			}
			b := env.Browser()
			if r := b.AcceptInvite(token, subject); r.Status != http.StatusOK {
				t.Fatalf("accept the invite of %s: %s", subject, r)
			}
			m, err := env.Store.MemberBySubject(ctx, env.Account.ID, subject)
			if err != nil {
				t.Fatal(err)
			}
			return b, m
		}
		ada, adaM := invite("ada", models.RoleOwner)
		bob, bobM := invite("bob", models.RoleMember)

		begin := ada.Post("/devices/begin", map[string]string{"device_name": "Work Mac"})
		if begin.Status != http.StatusOK {
			t.Fatalf("begin: %s", begin)
		}
		id, options := begin.Ceremony()
		if id == "" || !strings.Contains(string(options), ada.Passkey.CredentialIDString()) {
			t.Fatalf("the options do not exclude the passkey ada has: %s", options)
		}
		second := apptest.NewAuthenticator()
		credential, err := second.Register(ada.Origin, options)
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		reply := map[string]any{"ceremony": id, "credential": json.RawMessage(credential)}
		if r := ada.Post("/devices/finish", reply); r.Status != http.StatusOK || r.Body["redirect"] != "/devices" {
			t.Fatalf("finish: %s", r)
		}
		keys, err := env.Store.DeviceKeys(ctx, adaM.ID)
		if err != nil || len(keys) != 2 || keys[1].ID != second.CredentialIDString() || keys[1].Name != "Work Mac" {
			t.Fatalf("ada's passkeys = %+v %v", keys, err)
		}
		res, err := ada.HTTP.Get(env.URL + "/devices")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(page), "Passkey added.") || !strings.Contains(string(page), "Work Mac") {
			t.Fatalf("the devices page does not show the new passkey and the notice")
		}
		if r := ada.Post("/devices/finish", reply); r.Status != http.StatusConflict || r.Code() != "FAILED_PRECONDITION" {
			t.Fatalf("finishing the same ceremony twice: %s", r)
		}

		elsewhere := env.Browser()
		elsewhere.Passkey = second
		if r := elsewhere.SignIn(); r.Status != http.StatusOK || elsewhere.Session() == "" {
			t.Fatalf("sign in with the new passkey: %s", r)
		}

		t.Run("another person cannot finish the ceremony", func(t *testing.T) {
			begin := ada.For(t).Post("/devices/begin", map[string]string{"device_name": "Stolen"})
			id, options := begin.Ceremony()
			third := apptest.NewAuthenticator()
			credential, err := third.Register(ada.Origin, options)
			if err != nil {
				t.Fatal(err)
			}
			r := bob.For(t).Post("/devices/finish", map[string]any{"ceremony": id, "credential": json.RawMessage(credential)})
			if r.Status != http.StatusForbidden {
				t.Fatalf("bob finishing ada's ceremony: %s", r)
			}
			for _, m := range []*models.Member{adaM, bobM} {
				keys, _ := env.Store.DeviceKeys(ctx, m.ID)
				for _, k := range keys {
					if k.ID == third.CredentialIDString() {
						t.Fatalf("the passkey was stored for %s", m.Subject)
					}
				}
			}
		})
		t.Run("a device name over 64 characters is refused", func(t *testing.T) {
			if r := ada.For(t).Post("/devices/begin", map[string]string{"device_name": strings.Repeat("x", 65)}); r.Status != http.StatusBadRequest || r.Field() != "device_name" {
				t.Fatalf("a long name: %s", r)
			}
		})
	})
}
