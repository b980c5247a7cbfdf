package browsertest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
)

// grantClipboard lets the page write and read the clipboard, as a person's
// click on Copy does.
func grantClipboard(p *Page) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
	defer cancel()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true}, Setting: cdpbrowser.PermissionSettingGranted,
			Origin: p.Origin, BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID,
		}); err != nil {
			p.Fatalf("Browser.setPermission %s: %v", name, err)
		}
	}
}

func TestAnAdminCopiesAnInviteFillsARuleFromAnExampleAndGoesAwayInLocalTime(t *testing.T) {
	s := start(t, apptest.SQLite)
	ada := s.signUp("ada", core.RoleOwner)
	s.env.Member(s.env.Account.ID, "bob", core.RoleOwner) // a delegate holds the role of the person away, or a higher one
	p := s.page
	ctx := context.Background()

	p.Go("/admin")
	p.WaitVisible("[data-testid=admin-index]")
	accessibleInBothSchemes(p, "/admin")

	t.Run("the invite link is copied with one click, and shown as a QR code", func(t *testing.T) {
		p := p.For(t)
		grantClipboard(p)
		p.Go("/admin/members")
		p.ClickToLoad("[data-testid=create-invite]", "/admin/invites", "[data-testid=invite-url]")
		link := p.Text("[data-testid=invite-url]")
		if !strings.HasPrefix(link, s.env.URL+"/invite/") || p.Count("svg[data-testid=qr]") != 1 {
			t.Fatalf("the new invite shows %q, QR codes %d; want the link and its QR code", link, p.Count("svg[data-testid=qr]"))
		}
		accessibleInBothSchemes(p, "the members page with a new invite")
		p.Click("[data-testid=copy-invite-url]")
		p.WaitFor("Copied", `document.querySelector("[data-copied]").textContent === "Copied."`)
		if got := evalAwait[string](p, `navigator.clipboard.readText()`); got != link {
			t.Errorf("the clipboard holds %q, want the invite link %q", got, link)
		}
	})

	t.Run("an example fills the rule form in, and the rule is proposed as shown", func(t *testing.T) {
		p := p.For(t)
		p.Go("/admin/rules")
		p.WaitVisible("[data-testid=rule-example]")
		accessibleInBothSchemes(p, "/admin/rules")
		if label := p.Text("[data-testid=rule-example]"); label != "Production runs need two people" {
			t.Errorf("the first example is %q", label)
		}
		p.Click("[data-testid=rule-example]")
		got := Eval[map[string]string](p, `Object.fromEntries(["id", "kinds", "effects", "count", "pool_kind", "pool_role", "tools"].map(n => [n, document.querySelector("#rule-form [name=" + n + "]").value]))`)
		want := map[string]string{"id": "production-runs-need-two", "kinds": "run", "effects": "production", "count": "2", "pool_kind": "role", "pool_role": "admins", "tools": ""}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("after the example, %s is %q, want %q", k, got[k], v)
			}
		}
		Eval[bool](p, `window.browsertestClickedHere = true`)
		p.Click("[data-testid=propose-rule]")
		p.WaitFor("the rule change's ask", `!window.browsertestClickedHere && document.readyState === "complete" && location.pathname.startsWith("/approvals/")`)
		a, err := s.env.Store.GetApproval(ctx, s.env.Account.ID, strings.TrimPrefix(p.Path(), "/approvals/"))
		if err != nil || a.Kind != ask.KindRuleChange {
			t.Fatalf("the proposal filed %+v (%v), want a rule change", a, err)
		}
		var payload struct {
			RuleChange models.RuleChange `json:"rule_change"`
		}
		if err := json.Unmarshal([]byte(a.Payload), &payload); err != nil {
			t.Fatal(err)
		}
		if r := payload.RuleChange; r.RuleID != "production-runs-need-two" || r.Rule == nil || r.Rule.Count != 2 ||
			strings.Join(r.Rule.Kinds, ",") != "run" || strings.Join(r.Rule.Effects, ",") != "production" {
			t.Errorf("the proposed rule is %+v, want the example's", r)
		}
	})

	t.Run("away times are typed in local time with the zone named, and sent as UTC", func(t *testing.T) {
		p := p.For(t)
		tctx, cancel := context.WithTimeout(p.ctx, StepTimeout)
		defer cancel()
		if _, err := chromedp.Call(tctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"}); err != nil {
			p.Fatalf("Emulation.setTimezoneOverride: %v", err)
		}
		p.Go("/devices")
		p.WaitVisible("#away-until")
		if zone := p.Text("[data-testid=away-zone]"); zone != "(Asia/Tokyo time)" {
			t.Errorf("the away field is labelled %q, want the browser's zone", zone)
		}
		tokyo := time.FixedZone("JST", 9*3600)
		suggested := Eval[string](p, `document.getElementById("away-until").value`)
		if at, err := time.ParseInLocation("2006-01-02T15:04", suggested, tokyo); err != nil || at.Sub(time.Now()) < 23*time.Hour || at.Sub(time.Now()) > 25*time.Hour {
			t.Errorf("the suggested time %q (%v) is not a day ahead in Tokyo time", suggested, err)
		}
		accessibleInBothSchemes(p, "/devices")
		d := time.Now().In(tokyo).AddDate(0, 0, 2)
		nine := time.Date(d.Year(), d.Month(), d.Day(), 9, 0, 0, 0, tokyo)
		Eval[string](p, `document.getElementById("away-until").value = `+jsString(nine.Format("2006-01-02T15:04")))
		Eval[string](p, `document.getElementById("away-delegate").value = "bob"`)
		p.ClickToLoad("[data-testid=go-away]", "/devices", "[data-testid=come-back]")
		away, err := s.env.Store.AwayOf(ctx, ada)
		if err != nil || away == nil || !away.Until.Equal(nine) {
			t.Errorf("away %+v (%v), want until %s (09:00 in Tokyo)", away, err, nine.UTC())
		}
	})
}
