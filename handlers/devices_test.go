package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

func TestDevicesRenameAndRemoveButNeverTheLast(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		for _, k := range []people.DeviceKey{{ID: "cred-1", Name: "iPhone", Credential: "{}", PublicKey: "AQ", BackedUp: true}, {ID: "cred-2", Name: "Mac", Credential: "{}", PublicKey: "Ag"}} {
			if err := apptest.SeedDeviceKey(ctx, f.env.Store, f.member.ID, k); err != nil {
				t.Fatal(err)
			}
		}
		if err := apptest.SeedDeviceKey(ctx, f.env.Store, f.other.ID, people.DeviceKey{ID: "cred-cy", Name: "Cy's phone", Credential: "{}", PublicKey: "Aw"}); err != nil {
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

		// Removing is signed (device_remove_test.go): the form alone is
		// refused on the page, and changes nothing.
		res, body = b.post("/devices/cred-2/remove", nil, true)
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("remove with the form alone: %d", res.StatusCode)
		}
		refusal := elements(parseHTML(t, body), byAttr("data-testid", "refusal"))
		if len(refusal) != 1 || !strings.Contains(textOf(refusal[0]), "confirmation with one of your passkeys") {
			t.Fatalf("the refusal is not shown")
		}
		if a := b.postJSON("/devices/cred-cy/remove/begin", "", map[string]string{}, true); a.status != http.StatusNotFound {
			t.Fatalf("a prompt to remove another person's passkey: %d %s", a.status, a.raw)
		}
		if err := f.env.Store.RemoveDeviceKey(ctx, f.member.ID, "cred-2"); err != nil {
			t.Fatal(err)
		}
		a := b.postJSON("/devices/cred-1/remove/begin", "", map[string]string{}, true)
		if a.status != http.StatusConflict || !strings.Contains(a.raw, "last passkey") {
			t.Fatalf("a prompt to remove the last passkey: %d %s", a.status, a.raw)
		}
		if err := f.env.Store.RemoveDeviceKey(ctx, f.member.ID, "cred-1"); core.CodeOf(err) != core.FailedPrecondition {
			t.Fatalf("the store removed the last passkey: %v", err)
		}
		keys, err := f.env.Store.DeviceKeys(ctx, f.member.ID)
		if err != nil || len(keys) != 1 || keys[0].ID != "cred-1" {
			t.Fatalf("passkeys after = %v %v", keys, err)
		}
		if k, _ := f.env.Store.DeviceKeyByID(ctx, "cred-cy"); k == nil {
			t.Fatalf("another person's passkey was removed")
		}
	})
}
