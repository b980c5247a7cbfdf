package app

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestTheReadmeTableIsMadeFromSettings holds the README's configuration
// table to Settings, the source countersign help prints from too.
func TestTheReadmeTableIsMadeFromSettings(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(readme), "| Variable | Default | Meaning |")
	if start < 0 {
		t.Fatal("README.md has no configuration table")
	}
	table, _, _ := strings.Cut(string(readme[start:]), "\n\n")
	if want := strings.TrimSuffix(MarkdownTable(), "\n"); table != want {
		t.Errorf("README.md's configuration table is not MarkdownTable(); replace it with:\n%s", want)
	}
	for _, s := range Settings {
		if !strings.Contains(table, "| `"+s.Name+"` |") {
			t.Errorf("the table has no row for %s", s.Name)
		}
	}
}

func TestTheTextTableAlignsEveryColumnAndKeepsEveryWord(t *testing.T) {
	text := TextTable(100)
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	col := strings.Index(lines[0], "MEANING")
	defCol := strings.Index(lines[0], "DEFAULT")
	for _, l := range lines[1:] {
		if len(l) > 100 && !strings.Contains(l[col:], " ") {
			continue // one word longer than the width stays whole
		}
		if len(l) > 100 {
			t.Errorf("line over 100 columns: %q", l)
		}
		if l[col-1] != ' ' || l[col] == ' ' || l[defCol-1] != ' ' {
			t.Errorf("line %q: the meaning does not start at column %d", l, col)
		}
	}
	for _, s := range Settings {
		if !strings.Contains(text, "  "+s.Name+" ") {
			t.Errorf("no row for %s", s.Name)
		}
		for _, w := range strings.Fields(strings.ReplaceAll(s.Meaning, "`", "")) {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the word %q is missing", s.Name, w)
			}
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
		c.SessionIdle != 12*time.Hour || c.AgentIdle != 30*time.Minute || c.DatabasePool != 32 {
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

func TestTheDatabasePoolIsValidatedAtStart(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
		want  int
	}{
		{"8", true, 8}, {"64", true, 64}, {"1000", true, 1000}, {"7", false, 0}, {"0", false, 0},
		{"-8", false, 0}, {"1001", false, 0}, {"many", false, 0}, {"8.5", false, 0},
	} {
		t.Run(tc.value, func(t *testing.T) {
			c, err := LoadConfig(func(k string) string {
				if k == "COUNTERSIGN_DATABASE_POOL" {
					return tc.value
				}
				return ""
			})
			if tc.ok != (err == nil) {
				t.Fatalf("COUNTERSIGN_DATABASE_POOL=%s: err = %v, want ok=%t", tc.value, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "COUNTERSIGN_DATABASE_POOL: must be a whole number from 8 to 1000") {
				t.Errorf("the error does not name the variable and its range: %v", err)
			}
			if tc.ok && c.DatabasePool != tc.want {
				t.Errorf("DatabasePool = %d, want %d", c.DatabasePool, tc.want)
			}
		})
	}
}
