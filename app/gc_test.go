package app

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	debug.SetGCPercent(100)
	if got := TuneGC(func(string) string { return "" }); got != "400" {
		t.Errorf("TuneGC without GOGC = %q, want 400", got)
	}
	if was := debug.SetGCPercent(100); was != DefaultGCPercent {
		t.Errorf("without GOGC the target is %d, want %d", was, DefaultGCPercent)
	}

	env := map[string]string{"GOGC": "150"}
	if got := TuneGC(func(k string) string { return env[k] }); got != "150" {
		t.Errorf("TuneGC with GOGC=150 = %q, want 150", got)
	}
	if was := debug.SetGCPercent(100); was != 100 {
		t.Errorf("with GOGC set TuneGC changed the target to %d; the runtime applies GOGC itself", was)
	}
}
