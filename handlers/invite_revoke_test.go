package handlers_test

import (
	"context"
	"image"
	"image/color"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
	"golang.org/x/net/html"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
)

var (
	qrViewBox = regexp.MustCompile(`^0 0 (\d+) (\d+)$`)
	qrModule  = regexp.MustCompile(`M(\d+) (\d+)h1v1h-1z`)
)

// decodeQR reads the inline SVG QR code svg as a phone's camera would: it
// draws its squares, eight pixels a module, and decodes the picture.
func decodeQR(t *testing.T, svg *html.Node) string {
	t.Helper()
	m := qrViewBox.FindStringSubmatch(attrOf(svg, "viewBox"))
	if m == nil {
		t.Fatalf("the QR code's viewBox is %q", attrOf(svg, "viewBox"))
	}
	const scale = 8
	size, _ := strconv.Atoi(m[1])
	img := image.NewGray(image.Rect(0, 0, size*scale, size*scale))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	var d string
	for _, p := range elements(svg, func(n *html.Node) bool { return n.Data == "path" }) {
		d += attrOf(p, "d")
	}
	for _, sq := range qrModule.FindAllStringSubmatch(d, -1) {
		x, _ := strconv.Atoi(sq[1])
		y, _ := strconv.Atoi(sq[2])
		for dy := range scale {
			for dx := range scale {
				img.SetGray(x*scale+dx, y*scale+dy, color.Gray{})
			}
		}
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("the QR code does not decode: %v", err)
	}
	return res.GetText()
}

func TestAnInviteLinkComesWithCopyAndAQRCodeAndAnUnusedOneIsRevoked(t *testing.T) {
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		f := newFixture(t, db)
		ctx := context.Background()
		owner, admin := signIn(t, f.env, f.owner), signIn(t, f.env, f.admin)

		res, body := owner.post("/admin/invites", url.Values{"role": {"member"}, "subject": {"dee"}}, true)
		doc := parseHTML(t, body)
		box := elements(doc, byAttr("data-testid", "invite-url"))
		if res.StatusCode != http.StatusOK || len(box) != 1 {
			t.Fatalf("invite: HTTP %d without the link", res.StatusCode)
		}
		link := textOf(box[0])
		if copyButtons := elements(doc, byAttr("data-copy", "invite-url")); len(copyButtons) != 1 || copyButtons[0].Data != "button" {
			t.Errorf("the invite link has no Copy button")
		}
		qrs := elements(doc, byAttr("data-testid", "qr"))
		if len(qrs) != 1 || qrs[0].Data != "svg" || attrOf(qrs[0], "role") != "img" || attrOf(qrs[0], "aria-label") == "" {
			t.Fatalf("no labelled inline SVG QR code beside the invite link")
		}
		if got := decodeQR(t, qrs[0]); got != link {
			t.Errorf("the QR code reads %q, want the invite link %q", got, link)
		}
		token := strings.TrimPrefix(link, f.env.App.Config.BaseURL+"/invite/")
		inv, err := f.env.Store.InviteByToken(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		revoke := "/admin/invites/" + inv.TokenHash + "/revoke"
		_, members := owner.get("/admin/members")
		forms := elements(parseHTML(t, members), func(n *html.Node) bool { return n.Data == "form" && attrOf(n, "action") == revoke })
		if len(forms) != 1 {
			t.Fatalf("the pending invite has no revoke form posting to %s", revoke)
		}

		t.Run("without the CSRF token nothing is revoked", func(t *testing.T) {
			if res, _ := owner.post(revoke, nil, false); res.StatusCode != http.StatusForbidden {
				t.Errorf("revoke without CSRF: %d, want 403", res.StatusCode)
			}
			if _, err := f.env.Store.InviteByToken(ctx, token); err != nil {
				t.Errorf("the invite stopped working: %v", err)
			}
		})
		t.Run("an admin cannot revoke an owner's invite for an owner", func(t *testing.T) {
			_, ownerInv, err := f.env.Store.CreateInvite(ctx, people.NewInvite{AccountID: f.env.Account.ID, Role: core.RoleOwner, By: f.owner.AsInviter()})
			if err != nil {
				t.Fatal(err)
			}
			if res, _ := admin.post("/admin/invites/"+ownerInv.TokenHash+"/revoke", nil, true); res.StatusCode != http.StatusForbidden {
				t.Errorf("an admin revokes an owner invite: %d, want 403", res.StatusCode)
			}
			// The owner invite may be held for the account's second person
			// (builtin-member-change): what matters is that it is not ended.
			invites, err := f.env.Store.Invites(ctx, f.env.Account.ID)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, i := range invites {
				if i.TokenHash == ownerInv.TokenHash {
					found = true
					if !i.ExpiresAt.Equal(ownerInv.ExpiresAt) {
						t.Errorf("the owner invite was ended: expires %v, was %v", i.ExpiresAt, ownerInv.ExpiresAt)
					}
				}
			}
			if !found {
				t.Error("the owner invite is not listed")
			}
		})
		t.Run("another account's invite is not found", func(t *testing.T) {
			if res, _ := owner.post("/admin/invites/"+strings.Repeat("0", 64)+"/revoke", nil, true); res.StatusCode != http.StatusNotFound {
				t.Errorf("revoke an unknown invite: %d, want 404", res.StatusCode)
			}
		})

		if res, _ := admin.post(revoke, nil, true); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/members" {
			t.Fatalf("revoke: %d to %q, want 303 to the members page", res.StatusCode, res.Header.Get("Location"))
		}
		if _, err := f.env.Store.InviteByToken(ctx, token); core.CodeOf(err) != core.FailedPrecondition {
			t.Errorf("the revoked invite's link: %v, want refused", err)
		}
		if status := apptest.NewBrowser(t, f.env.URL).Page("/invite/" + token).Status; status == http.StatusOK {
			t.Errorf("the revoked invite's page still opens")
		}
		events, _, err := f.env.Store.Audit(ctx, f.env.Account.ID, audit.AuditFilter{Step: people.StepInviteRevoked})
		if err != nil || len(events) != 1 || events[0].Actor != "ali" || !strings.Contains(events[0].Note, "dee") || !strings.Contains(events[0].Note, "ada") {
			t.Errorf("audit of the revocation: %+v (%v), want one event by ali naming dee and ada", events, err)
		}
		if res, body := owner.post(revoke, nil, true); res.StatusCode != http.StatusConflict || !strings.Contains(body, "ended already") {
			t.Errorf("revoking it again: %d, want 409 saying it has ended", res.StatusCode)
		}
		_, members = owner.get("/admin/members")
		if strings.Contains(members, revoke) {
			t.Errorf("the ended invite still offers Revoke")
		}
	})
}

func TestAdminIsAnIndexOfTheAdminPages(t *testing.T) {
	f := newFixture(t, apptest.SQLite)
	b := signIn(t, f.env, f.admin)
	res, body := b.get("/admin")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin: %d, want the index", res.StatusCode)
	}
	index := elements(parseHTML(t, body), byAttr("data-testid", "admin-index"))
	if len(index) != 1 {
		t.Fatalf("no admin index on /admin")
	}
	var links []string
	for _, a := range elements(index[0], func(n *html.Node) bool { return n.Data == "a" }) {
		links = append(links, attrOf(a, "href"))
	}
	want := []string{"/admin/members", "/admin/agents", "/admin/runners", "/policies", "/admin/rules", "/admin/channels", "/admin/ciba-clients", "/admin/audit"}
	if strings.Join(links, " ") != strings.Join(want, " ") {
		t.Errorf("the index links to %v, want %v", links, want)
	}
	for _, path := range want {
		if res, _ := b.get(path); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s from the index: %d", path, res.StatusCode)
		}
	}
	if _, inbox := b.get("/"); !strings.Contains(inbox, `href="/admin"`) {
		t.Errorf("an admin's nav does not lead to /admin")
	}
}
