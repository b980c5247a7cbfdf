package browsertest

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/apptest/gatetest"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/core"
)

// chromiumPerson is ada answering the gate's asks on the ask page, in
// Chromium, with the virtual authenticator's passkey.
type chromiumPerson struct{ s *service }

func (p chromiumPerson) Subject() string { return "ada" }

// Answer opens the ask from the inbox, checks that it shows the exact call,
// and presses the answer's button; with "" it leaves the page open.
func (p chromiumPerson) Answer(t *testing.T, a asks.Approval, answer string) {
	t.Helper()
	s := p.s.For(t)
	page := s.page
	s.openFromInbox(a.ID, "Call write_file on filesystem")
	if tool := page.Text("[data-testid=tool]"); tool != "write_file" {
		page.Fatalf("the ask page shows the tool %q, want write_file", tool)
	}
	if args := page.Text("[data-testid=arguments]"); !strings.Contains(args, "content") || !strings.Contains(args, gatetest.Written) {
		page.Fatalf("the ask page's arguments table says %q, want the content %q", args, gatetest.Written)
	}
	page.Click("[data-testid=payload] details summary") // the canonical JSON is folded; a tap opens it
	if canonical := page.Text("[data-testid=canonical]"); !strings.Contains(canonical, `"tool":"write_file"`) {
		page.Fatalf("the canonical JSON is %q", canonical)
	}
	switch answer {
	case "":
		return
	case "approve":
		s.answer(a.ID, "[data-testid=approve]")
		// The gate reports started, then done: the person's timeline shows the call ran.
		page.WaitFor("the status done", statusIs("done"))
		if box := page.Text("[data-testid=decision]"); !strings.Contains(box, "Approved") || !strings.Contains(box, "ada") {
			page.Fatalf("the decision box says %q", box)
		}
		if tl := page.Text("[data-timeline]"); !strings.Contains(tl, "started") || !strings.Contains(tl, "done") {
			page.Fatalf("the timeline does not show the call running:\n%s", tl)
		}
	case "edit":
		// Set at once, as a paste would, with the input event the page listens for.
		Eval[bool](page, `(() => { const f = document.querySelector("[data-testid=edit-content]"); f.value = `+jsString(gatetest.EditedText)+`; f.dispatchEvent(new Event("input")); return true })()`)
		if diff := page.Text("[data-testid=edit-diff]"); !strings.Contains(diff, gatetest.Written) || !strings.Contains(diff, gatetest.EditedText) {
			page.Fatalf("the page shows the change as %q, want the content as asked and as edited", diff)
		}
		if note := page.Text("[data-testid=edit-note]"); !strings.Contains(note, "1 change") {
			page.Fatalf("the answer bar says %q, want that approving signs the change", note)
		}
		s.answer(a.ID, "[data-testid=approve]")
		page.WaitFor("the status done", statusIs("done"))
		if box := page.Text("[data-testid=decision]"); !strings.Contains(box, "Approved with changes") {
			page.Fatalf("the decision box says %q", box)
		}
		if made := page.Text("[data-testid=edits-made]"); !strings.Contains(made, gatetest.EditedText) {
			page.Fatalf("the settled ask shows the changes as %q", made)
		}
	case "deny":
		s.answer(a.ID, "[data-testid=deny]")
		s.checkDecided("denied", "Denied", "ada")
	case "reply":
		// Set at once, not typed key by key: the gate's scenarios hold a call 2 s.
		Eval[bool](page, `(document.querySelector("[data-testid=reply-text]").value = `+jsString(gatetest.ReplyText)+`, true)`)
		s.answer(a.ID, "[data-testid=reply]")
		s.checkDecided("denied", "Denied with a reply", "ada")
	default:
		t.Fatalf("no button for %q", answer)
	}
}

// ApproveLate is a page that did not hear the withdrawal (a phone that was
// offline): the open page shows the ask withdrawn, live; with its buttons
// put back, an approve signed by the passkey is refused by the service.
func (p chromiumPerson) ApproveLate(t *testing.T, a asks.Approval) {
	t.Helper()
	page := p.s.page.For(t)
	page.WaitFor("the status stale, live", statusIs("stale"))
	if !Eval[bool](page, `[...document.querySelectorAll("[data-actions]")].every((e) => e.hidden)`) {
		page.Fatalf("a withdrawn ask still shows its buttons")
	}
	Eval[bool](page, `(document.querySelectorAll("[data-actions]").forEach((e) => (e.hidden = false)), true)`)
	page.Click("[data-testid=check-code-" + p.s.env.CheckCode(a.ID) + "]") // a tool call is approved by the pick of its check code
	page.WaitVisible("[data-error]")
	if msg := page.Text("[data-error]"); !strings.Contains(msg, "is stale") || !strings.Contains(msg, "nothing was recorded") {
		page.Fatalf("the late approve says %q, want the ask is stale and nothing was recorded", msg)
	}
	page.Reload()
	page.WaitFor("the status stale after a reload", statusIs("stale"))
	if n := page.Count("[data-testid=approve], [data-testid=deny]"); n != 0 {
		page.Fatalf("a withdrawn ask shows %d answer buttons after a reload", n)
	}
}

// TestGateInFrontOfServerFilesystemWithAPersonInChromium runs countersign
// gate over stdio in front of the npm filesystem server, driven by a go-sdk
// MCP client, with ada approving in Chromium.
func TestGateInFrontOfServerFilesystemWithAPersonInChromium(t *testing.T) {
	gatetest.FilesystemServer(t)
	NeedChromium(t)
	binary := gatetest.BuildCountersign(t)
	apptest.ForEachDatabase(t, func(t *testing.T, db apptest.Database) {
		s := start(t, db)
		s.signUp("ada", core.RoleOwner)
		// The late approve's challenge is refused on purpose.
		s.expected = func(e string) bool { return strings.Contains(e, "/challenge") && strings.Contains(e, "status of 409") }
		gatetest.RunFilesystemScenarios(t, gatetest.Setup{Env: s.env, Binary: binary, Person: chromiumPerson{s}})
	})
}
