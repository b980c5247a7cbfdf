package app

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestTheReadmeDocumentsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		def := "empty"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		row := "| `" + s.Name + "` | " + def + " |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no configuration row starting %q", row)
		}
	}
}

func TestDefaultsLoad(t *testing.T) {
	c, err := LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatalf("the defaults do not load: %v", err)
	}
	if c.Addr != ":8080" || c.Data != "./data" || c.DatabaseURL != "" || c.BaseURL != "http://localhost:8080" ||
		c.AskRate.String() != "60/m" || c.AskBurst != 20 || c.PushCap.N != 20 || c.PushContact != "mailto:countersign@localhost" ||
		c.SessionIdle != 12*time.Hour || c.AgentIdle != 30*time.Minute {
		t.Errorf("defaults = %+v", c)
	}
}

func TestAgentSessionIdleIsValidatedAtStart(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
		want  time.Duration
	}{
		{"1s", true, time.Second}, {"45m", true, 45 * time.Minute}, {"999ms", false, 0}, {"0", false, 0},
		{"-5m", false, 0}, {"thirty minutes", false, 0}, {"30", false, 0},
	} {
		t.Run(tc.value, func(t *testing.T) {
			c, err := LoadConfig(func(k string) string {
				if k == "COUNTERSIGN_SESSION_IDLE" {
					return tc.value
				}
				return ""
			})
			if tc.ok != (err == nil) {
				t.Fatalf("COUNTERSIGN_SESSION_IDLE=%s: err = %v, want ok=%t", tc.value, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "COUNTERSIGN_SESSION_IDLE:") {
				t.Errorf("the error does not name the variable: %v", err)
			}
			if tc.ok && c.AgentIdle != tc.want {
				t.Errorf("AgentIdle = %v, want %v", c.AgentIdle, tc.want)
			}
		})
	}
}
