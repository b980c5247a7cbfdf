package browsertest

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/outbox"
)

// On a phone, a person turns email on from the Devices page, sends
// themselves a test and turns it off, under the strict CSP: nothing scrolls
// sideways, axe-core finds nothing, and the console stays clean (start
// fails the test on any console error).
func TestAPersonTurnsEmailOnAndOffFromTheDevicesPageOnAPhone(t *testing.T) {
	s := startWith(t, apptest.SQLite, map[string]string{
		"COUNTERSIGN_SMTP_URL":  "smtp://127.0.0.1:9?security=none", // no server there: the test waits for a retry
		"COUNTERSIGN_SMTP_FROM": "Countersign <approvals@example.com>",
	})
	p := s.page
	p.Emulate(phoneWidth, phoneHeight)
	ada := s.signUp("ada", core.RoleOwner)
	ctx := context.Background()

	p.Go("/devices")
	p.WaitVisible("[data-testid=channel-form-email]")
	if state := p.Text("[data-testid=channel-email] [data-testid=channel-state]"); state != "Off." {
		t.Errorf("email is %q before it is turned on", state)
	}
	if line := p.Text("[data-testid=channel-slack] [data-testid=channel-not-set-up]"); !strings.Contains(line, "COUNTERSIGN_SLACK_BOT_TOKEN") {
		t.Errorf("Slack, not set up, says %q", line)
	}
	fitsThePhone(p, "the devices page with email off")
	accessibleInBothSchemes(p, "the devices page with email off")

	p.Type("#address-email", "ada@example.com")
	p.ClickToLoad("[data-testid=save-email]", "/devices", "[data-testid=test-email]")
	if got := p.Text("[data-testid=channel-address]"); got != "ada@example.com" {
		t.Errorf("the page shows the address %q", got)
	}
	if flash := p.Text("main .flash"); !strings.HasPrefix(flash, "Saved") {
		t.Errorf("the flash says %q", flash)
	}
	fitsThePhone(p, "the devices page with email on")
	accessibleInBothSchemes(p, "the devices page with email on")

	p.ClickToLoad("[data-testid=test-email]", "/devices", "main .flash")
	if flash := p.Text("main .flash"); !strings.HasPrefix(flash, "Test queued") {
		t.Errorf("after Send me a test, the flash says %q", flash)
	}
	var tests int64
	if err := s.env.Store.DB().Table("channel_messages").Where("person_id = ? AND kind = ? AND event = ?", ada.ID, outbox.ChannelEmail, outbox.MessageTest).Count(&tests).Error; err != nil || tests != 1 {
		t.Errorf("%d test messages queued (%v), want 1", tests, err)
	}

	p.ClickToLoad("[data-testid=off-email]", "/devices", "[data-testid=save-email]")
	if state := p.Text("[data-testid=channel-email] [data-testid=channel-state]"); state != "Off." {
		t.Errorf("email is %q after it is turned off", state)
	}
	if got, err := s.env.Store.PersonChannels(ctx, s.env.Account.ID, ada.ID); err != nil || len(got) != 0 {
		t.Errorf("after turning it off: %+v %v", got, err)
	}
}
