package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// A rule that compares a path argument as a raw string is warned of at
// start, naming the rule and what to write instead; a rule with
// path.within is not.
func TestTheGateWarnsAtStartOfARuleThatComparesAPathAsARawString(t *testing.T) {
	rules := writeRules(t, `{"server": "files", "tools": {
		"write_file": {"approval": "args.path.startsWith('/srv/fs/secret')"},
		"move_file": {"approval": "path.within(args.destination, '/srv/fs/secret')"}}}`)
	var stderr strings.Builder
	// No COUNTERSIGN_URL: the start stops after the rules are read.
	err := gateCommand(context.Background(), []string{"--rules", rules, "--", "true"},
		func(string) string { return "" }, strings.NewReader(""), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "COUNTERSIGN_URL") {
		t.Fatalf("gate = %v, want the refusal for want of COUNTERSIGN_URL", err)
	}
	var warnings []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.Contains(line, "level=WARN") {
			warnings = append(warnings, line)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("warnings = %q, want one, for write_file", warnings)
	}
	for _, want := range []string{"a rule compares a path as a raw string", "tool=write_file", "rule=args.path.startsWith('/srv/fs/secret')",
		"argument=args.path", "function=startsWith", `use="path.within(args.path, '/the/folder')"`, "rules=" + rules} {
		if !strings.Contains(warnings[0], want) {
			t.Errorf("the warning %q does not say %q", warnings[0], want)
		}
	}
}
