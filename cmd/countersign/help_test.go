package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpCommands is every command and subcommand, with the words its --help
// must print.
var helpCommands = []struct {
	args []string
	says string
}{
	{[]string{"serve"}, "countersign [serve]"},
	{[]string{"healthcheck"}, "usage: countersign healthcheck"},
	{[]string{"account", "create"}, "countersign account create NAME"},
	{[]string{"account", "set"}, "countersign account set NAME"},
	{[]string{"account", "list"}, "countersign account list"},
	{[]string{"agent", "create"}, "countersign agent create --name NAME"},
	{[]string{"agent", "list"}, "countersign agent list"},
	{[]string{"agent", "disable"}, "countersign agent disable NAME"},
	{[]string{"invite"}, "usage: countersign invite --role"},
	{[]string{"keys", "export"}, "usage: countersign keys export"},
	{[]string{"runner", "init"}, "countersign runner init --dir D"},
	{[]string{"runner", "enroll"}, "countersign runner enroll --name N"},
	{[]string{"runner", "list"}, "countersign runner list"},
	{[]string{"runner", "disable"}, "countersign runner disable NAME"},
	{[]string{"runner", "trust"}, "countersign runner trust --dir D"},
	{[]string{"runner", "serve"}, "countersign runner serve --dir D --server URL"},
	{[]string{"vapid"}, "usage: countersign vapid"},
	{[]string{"backup"}, "usage: countersign backup --out FILE"},
	{[]string{"work", "column", "add"}, "countersign work column add --key KEY"},
	{[]string{"work", "column", "remove"}, "countersign work column remove KEY"},
	{[]string{"work", "item", "add"}, "countersign work item add --column KEY"},
	{[]string{"work", "item", "remove"}, "countersign work item remove ID"},
	{[]string{"work", "list"}, "countersign work list"},
	{[]string{"audit", "verify"}, "usage: countersign audit verify"},
	{[]string{"verify"}, "usage: countersign verify PROOF.json"},
	{[]string{"gate"}, "countersign gate --rules gate.json"},
	{[]string{"ask"}, "usage: countersign ask --title TEXT"},
	{[]string{"doctor"}, "usage: countersign doctor"},
	{[]string{"ciba-client", "add"}, "countersign ciba-client add --name NAME"},
	{[]string{"ciba-client", "list"}, "countersign ciba-client list"},
	{[]string{"ciba-client", "revoke"}, "countersign ciba-client revoke ID"},
	{[]string{"oidc", "keys"}, "countersign oidc keys"},
	{[]string{"oidc", "rotate-key"}, "countersign oidc rotate-key"},
}

// Every command's --help (and -h, and -help) prints its usage on stdout and
// exits 0, with no configuration, no database and nothing on stderr; after
// gate's "--" a --help is the upstream's, not gate's.
func TestEveryHelpPrintsItsUsageAndExitsZero(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"COUNTERSIGN_DATA": data}
	for _, c := range helpCommands {
		for _, flag := range []string{"--help", "-h", "-help"} {
			args := append(slices.Clone(c.args), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				r := cli(t, env, args...)
				if r.code != 0 || !strings.Contains(r.stdout, c.says) || r.stderr != "" {
					t.Errorf("want exit 0 with %q on stdout and nothing on stderr; got\n%s", c.says, r)
				}
			})
		}
	}
	t.Run("gate -- COMMAND --help is not gate's help", func(t *testing.T) {
		r := cli(t, env, "gate", "--", "true", "--help")
		if r.code == 0 || strings.Contains(r.stdout, "usage") || !strings.Contains(r.stderr, "--rules is required") {
			t.Errorf("want gate refusing its missing --rules; got\n%s", r)
		}
	})
	if entries, err := os.ReadDir(data); err != nil || len(entries) != 0 {
		t.Errorf("the help made %d entries in the data folder (%v), want none: help reads no database", len(entries), err)
	}
}

var usageFlag = regexp.MustCompile(`--[a-z][a-z-]*`)

// countersign help names every flag each command's own usage names.
func TestHelpNamesEveryFlagOfEveryCommand(t *testing.T) {
	help := mustCLI(t, nil, "help").stdout
	for _, c := range helpCommands {
		own := mustCLI(t, nil, append(slices.Clone(c.args), "--help")...).stdout
		for _, f := range usageFlag.FindAllString(own, -1) {
			if !regexp.MustCompile(regexp.QuoteMeta(f) + `([^a-z-]|$)`).MatchString(help) {
				t.Errorf("%s --help names %s; countersign help does not", strings.Join(c.args, " "), f)
			}
		}
	}
}
