package static_test

import (
	"os/exec"
	"testing"
)

// TestTheServiceWorkerHandlers runs web/test/sw.test.mjs: the built service
// worker's push, notificationclick and pushsubscriptionchange handlers,
// with stubbed clients (no browser automation can click a system
// notification). Without Node the test fails: it must run in CI.
func TestTheServiceWorkerHandlers(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: the service worker tests need Node 20 (%v)", err)
	}
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "web/test/sw.test.mjs")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test web/test/sw.test.mjs: %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}
