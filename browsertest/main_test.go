package browsertest

import (
	"os"
	"testing"
)

// browser is the one Chromium of this test run; every test opens its own
// browser context in it.
var browser Browser

func TestMain(m *testing.M) {
	code := m.Run()
	browser.Close()
	os.Exit(code)
}
