package app

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestTheConfigurationPagesTableIsMadeFromSettings holds the table of
// docs/configuration.md to Settings, the source countersign help prints from too.
func TestTheConfigurationPagesTableIsMadeFromSettings(t *testing.T) {
	page, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(page), "| Variable | Default | Meaning |")
	if start < 0 {
		t.Fatal("docs/configuration.md has no table of settings")
	}
	table, _, _ := strings.Cut(string(page[start:]), "\n\n")
	if want := strings.TrimSuffix(MarkdownTable(), "\n"); table != want {
		t.Errorf("the table of docs/configuration.md is not MarkdownTable(); replace it with:\n%s", want)
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

// An instance cap set below the per-token default lowers that default with
// it; a per-token cap set explicitly above the instance's is refused.
func TestTheSessionCapPerTokenFollowsASmallerInstanceCap(t *testing.T) {
	env := map[string]string{"COUNTERSIGN_MCP_SESSIONS": "50"}
	c, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil || c.MCPSessions.Total != 50 || c.MCPSessions.PerToken != 50 {
		t.Fatalf("COUNTERSIGN_MCP_SESSIONS=50 alone: %+v, %v; want 50 per token", c.MCPSessions, err)
	}
	env["COUNTERSIGN_MCP_SESSIONS_PER_TOKEN"] = "51"
	if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN: must be a whole number from 1 to COUNTERSIGN_MCP_SESSIONS (50)") {
		t.Errorf("51 per token of 50: %v, want it refused by name", err)
	}
}

func TestDefaultsLoad(t *testing.T) {
	c, err := LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatalf("the defaults do not load: %v", err)
	}
	if c.Addr != ":8080" || c.Data != "./data" || c.DatabaseURL != "" || c.BaseURL != "http://localhost:8080" ||
		c.AskRate.String() != "60/m" || c.AskBurst != 20 || c.PushCap.N != 20 || c.PushContact != "mailto:countersign@localhost" ||
		c.SessionIdle != 12*time.Hour || c.AgentIdle != 30*time.Minute || c.DatabasePool != 32 ||
		c.MCPSessions.Total != 20000 || c.MCPSessions.PerToken != 100 || c.MCPSessions.Idle != 10*time.Minute {
		t.Errorf("defaults = %+v", c)
	}
}

// A setting out of its range is refused at start, naming the variable and
// what it takes; one in range is read as given.
func TestSettingsAreValidatedAtStart(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        any // the setting read, or nil when it is refused
		refusal     string
	}{
		{"COUNTERSIGN_SESSION_IDLE", "1s", time.Second, ""},
		{"COUNTERSIGN_SESSION_IDLE", "45m", 45 * time.Minute, ""},
		{"COUNTERSIGN_SESSION_IDLE", "999ms", nil, "COUNTERSIGN_SESSION_IDLE:"},
		{"COUNTERSIGN_SESSION_IDLE", "0", nil, "COUNTERSIGN_SESSION_IDLE:"},
		{"COUNTERSIGN_SESSION_IDLE", "-5m", nil, "COUNTERSIGN_SESSION_IDLE:"},
		{"COUNTERSIGN_SESSION_IDLE", "thirty minutes", nil, "COUNTERSIGN_SESSION_IDLE:"},
		{"COUNTERSIGN_SESSION_IDLE", "30", nil, "COUNTERSIGN_SESSION_IDLE:"},
		{"COUNTERSIGN_DATABASE_POOL", "8", 8, ""},
		{"COUNTERSIGN_DATABASE_POOL", "64", 64, ""},
		{"COUNTERSIGN_DATABASE_POOL", "1000", 1000, ""},
		{"COUNTERSIGN_DATABASE_POOL", "7", nil, "COUNTERSIGN_DATABASE_POOL: must be a whole number from 8 to 1000"},
		{"COUNTERSIGN_DATABASE_POOL", "0", nil, "COUNTERSIGN_DATABASE_POOL: must be a whole number from 8 to 1000"},
		{"COUNTERSIGN_DATABASE_POOL", "-8", nil, "COUNTERSIGN_DATABASE_POOL: must be a whole number from 8 to 1000"},
		{"COUNTERSIGN_DATABASE_POOL", "1001", nil, "COUNTERSIGN_DATABASE_POOL: must be a whole number from 8 to 1000"},
		{"COUNTERSIGN_DATABASE_POOL", "many", nil, "COUNTERSIGN_DATABASE_POOL: must be a whole number from 8 to 1000"},
		{"COUNTERSIGN_DATABASE_POOL", "8.5", nil, "COUNTERSIGN_DATABASE_POOL: must be a whole number from 8 to 1000"},
		{"COUNTERSIGN_MCP_SESSIONS", "1", 1, ""},
		{"COUNTERSIGN_MCP_SESSIONS", "1000000", 1000000, ""},
		{"COUNTERSIGN_MCP_SESSIONS", "0", nil, "COUNTERSIGN_MCP_SESSIONS: must be a whole number from 1 to 1000000"},
		{"COUNTERSIGN_MCP_SESSIONS", "1000001", nil, "COUNTERSIGN_MCP_SESSIONS: must be a whole number from 1 to 1000000"},
		{"COUNTERSIGN_MCP_SESSIONS", "20k", nil, "COUNTERSIGN_MCP_SESSIONS: must be a whole number from 1 to 1000000"},
		{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", "1", 1, ""},
		{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", "20000", 20000, ""},
		{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", "20001", nil, "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN: must be a whole number from 1 to COUNTERSIGN_MCP_SESSIONS (20000)"},
		{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", "0", nil, "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN: must be a whole number from 1 to COUNTERSIGN_MCP_SESSIONS (20000)"},
		{"COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", "-1", nil, "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN: must be a whole number from 1 to COUNTERSIGN_MCP_SESSIONS (20000)"},
		{"COUNTERSIGN_MCP_SESSION_IDLE", "1s", time.Second, ""},
		{"COUNTERSIGN_MCP_SESSION_IDLE", "24h", 24 * time.Hour, ""},
		{"COUNTERSIGN_MCP_SESSION_IDLE", "999ms", nil, "COUNTERSIGN_MCP_SESSION_IDLE: must be a duration from 1s to 24h, like 10m"},
		{"COUNTERSIGN_MCP_SESSION_IDLE", "25h", nil, "COUNTERSIGN_MCP_SESSION_IDLE: must be a duration from 1s to 24h, like 10m"},
		{"COUNTERSIGN_MCP_SESSION_IDLE", "10", nil, "COUNTERSIGN_MCP_SESSION_IDLE: must be a duration from 1s to 24h, like 10m"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			c, err := LoadConfig(func(k string) string {
				if k == tc.name {
					return tc.value
				}
				return ""
			})
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("err = %v, want a refusal saying %q", err, tc.refusal)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want it read", err)
			}
			read := map[string]any{"COUNTERSIGN_SESSION_IDLE": c.AgentIdle, "COUNTERSIGN_DATABASE_POOL": c.DatabasePool,
				"COUNTERSIGN_MCP_SESSIONS": c.MCPSessions.Total, "COUNTERSIGN_MCP_SESSIONS_PER_TOKEN": c.MCPSessions.PerToken,
				"COUNTERSIGN_MCP_SESSION_IDLE": c.MCPSessions.Idle}[tc.name]
			if read != tc.want {
				t.Errorf("read as %v, want %v", read, tc.want)
			}
		})
	}
}

// Without COUNTERSIGN_BASE_URL the base URL is made from COUNTERSIGN_ADDR,
// so the links serve prints lead to where it listens; a base URL given is
// kept as given.
func TestTheBaseURLIsMadeFromTheAddressWhenUnset(t *testing.T) {
	for _, tc := range []struct {
		addr, baseURL string
		want          string
		made          bool
	}{
		{"", "", "http://localhost:8080", true},
		{":9000", "", "http://localhost:9000", true},
		{"0.0.0.0:9000", "", "http://localhost:9000", true},
		{"[::]:9000", "", "http://localhost:9000", true},
		{"127.0.0.1:9000", "", "http://localhost:9000", true},
		{"[::1]:9000", "", "http://localhost:9000", true},
		{"approvals.lan:9000", "", "http://approvals.lan:9000", true},
		{"192.0.2.7:9000", "", "http://192.0.2.7:9000", true},
		{":9000", "https://approvals.example.com", "https://approvals.example.com", false},
	} {
		t.Run(tc.addr+" and base URL "+tc.baseURL, func(t *testing.T) {
			env := map[string]string{"COUNTERSIGN_ADDR": tc.addr, "COUNTERSIGN_BASE_URL": tc.baseURL}
			c, err := LoadConfig(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if c.BaseURL != tc.want || c.BaseURLFromAddr != tc.made {
				t.Errorf("base URL %q (made from the address: %t), want %q (%t)", c.BaseURL, c.BaseURLFromAddr, tc.want, tc.made)
			}
		})
	}
}

// A bare port in COUNTERSIGN_METRICS_ADDR listens on loopback only; an
// address with a host is kept as given (serve warns when others can reach it).
func TestABareMetricsPortMeansLoopback(t *testing.T) {
	for value, want := range map[string]string{
		":9090":          "127.0.0.1:9090",
		":0":             "127.0.0.1:0",
		"127.0.0.1:9090": "127.0.0.1:9090",
		"0.0.0.0:9090":   "0.0.0.0:9090",
		"[::]:9090":      "[::]:9090",
		"10.1.2.3:9090":  "10.1.2.3:9090",
	} {
		c, err := LoadConfig(func(k string) string {
			if k == "COUNTERSIGN_METRICS_ADDR" {
				return value
			}
			return ""
		})
		if err != nil || c.MetricsAddr != want {
			t.Errorf("COUNTERSIGN_METRICS_ADDR=%s: listens on %q (%v), want %q", value, c.MetricsAddr, err, want)
		}
	}
	if _, err := LoadConfig(func(k string) string {
		return map[string]string{"COUNTERSIGN_ADDR": ":9090", "COUNTERSIGN_METRICS_ADDR": ":9090"}[k]
	}); err == nil || !strings.Contains(err.Error(), "COUNTERSIGN_METRICS_ADDR: must differ from COUNTERSIGN_ADDR") {
		t.Errorf("the service's own address for metrics: %v, want it refused", err)
	}
}

// Forwarding between instances needs the instances' own secret, of at
// least 32 characters: forwarded calls are signed with it.
func TestForwardingNeedsTheInstanceSecret(t *testing.T) {
	for _, tc := range []struct{ secret, refusal string }{
		{"", "COUNTERSIGN_INSTANCE_SECRET: is needed with COUNTERSIGN_INSTANCE_URL"},
		{"short", "COUNTERSIGN_INSTANCE_SECRET: must be at least 32 characters"},
		{strings.Repeat("k", 32), ""},
	} {
		c, err := LoadConfig(func(k string) string {
			return map[string]string{"COUNTERSIGN_DATABASE_URL": "postgres://u:p@db/countersign",
				"COUNTERSIGN_INSTANCE_URL": "http://10.0.0.5:8080", "COUNTERSIGN_INSTANCE_SECRET": tc.secret}[k]
		})
		switch {
		case tc.refusal == "" && (err != nil || c.InstanceSecret != tc.secret):
			t.Errorf("a secret of %d characters: %v, read %q; want it read", len(tc.secret), err, c.InstanceSecret)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("a secret of %d characters: err = %v, want a refusal saying %q", len(tc.secret), err, tc.refusal)
		}
	}
}
