package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/apptest"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/rules"
	"github.com/countersign/countersign/proof"
)

// ruleRow is the line of `rule list` for id, "" when it is not listed.
func ruleRow(list, id string) string {
	for _, line := range strings.Split(list, "\n") {
		if strings.HasPrefix(line, id+" ") {
			return line
		}
	}
	return ""
}

func TestRulesAreSetListedAndRemovedFromTheCLIAndAudited(t *testing.T) {
	env := map[string]string{"COUNTERSIGN_DATA": t.TempDir()}
	mustCLI(t, env, "account", "list", "--init")

	set := mustCLI(t, env, "rule", "add", "prod-three", "--count", "3", "--pool", "asked_of+admins", "--kinds", "run", "--effects", "production",
		"--escalate-to", "owners", "--escalate-after", "30m", "--name", "three for production")
	if !strings.Contains(set.stdout, "rule prod-three set in account default: 3 of asked_of+admins; kinds run; effects production; escalates to owners after 30m0s") {
		t.Fatalf("rule add said:\n%s", set)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"rule", "add", "x", "--count", "9", "--pool", "admins"}, "count: must be 1 to 5 distinct people, not 9"},
		{[]string{"rule", "add", "x", "--count", "2", "--pool", "wizards"}, "must be owners, admins, members, asked_of+<role> or group:<name>=<subject>,…"},
		{[]string{"rule", "add", "x", "--count", "2", "--pool", "admins", "--kinds", "merge"}, `unknown kind "merge"`},
		{[]string{"rule", "add", "x", "--count", "2", "--pool", "admins", "--escalate-after", "5m"}, "a delay with no escalate_to pool and no escalate_channel escalates to nobody"},
		{[]string{"rule", "add", "x", "--count", "1", "--pool", "admins", "--escalate-channel", "#oncall", "--escalate-after", "5m"}, `no shared channel "#oncall" in this account`},
		{[]string{"rule", "remove", "nothing-here"}, `no rule "nothing-here" in this account`},
	} {
		r := cli(t, env, bad.args...)
		if r.code != 1 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("countersign %s: %s\nwant exit 1 saying %q", strings.Join(bad.args, " "), r, bad.want)
		}
	}
	list := mustCLI(t, env, "rule", "list").stdout
	if row := ruleRow(list, "prod-three"); !strings.Contains(row, " on ") || !strings.Contains(row, "cli:") {
		t.Errorf("prod-three row %q\n%s", row, list)
	}
	if row := ruleRow(list, "x"); row != "" {
		t.Errorf("a refused rule was stored: %q", row)
	}
	if row := ruleRow(list, rules.RuleRoll); !strings.Contains(row, " on ") || !strings.Contains(row, "built in") {
		t.Errorf("the built-in roll rule row %q\n%s", row, list)
	}
	mustCLI(t, env, "rule", "remove", rules.RuleRoll)
	mustCLI(t, env, "rule", "remove", "prod-three")
	list = mustCLI(t, env, "rule", "list").stdout
	if row := ruleRow(list, rules.RuleRoll); !strings.Contains(row, " off ") {
		t.Errorf("the removed built-in is not off: %q", row)
	}
	if row := ruleRow(list, "prod-three"); row != "" {
		t.Errorf("the removed rule is still listed: %q", row)
	}

	ctx := context.Background()
	store, err := app.OpenStore(ctx, mustConfig(t, env), apptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := store.DB().DB(); err == nil {
			sqlDB.Close()
		}
	}()
	var steps []string
	if err := store.DB().Table("events").Where("step IN ?", []string{rules.StepRuleSet, rules.StepRuleRemoved}).Order("seq").Pluck("step", &steps).Error; err != nil {
		t.Fatal(err)
	}
	if strings.Join(steps, " ") != "rule_set rule_removed rule_removed" {
		t.Errorf("audited steps %v, want rule_set rule_removed rule_removed", steps)
	}
	mustCLI(t, env, "audit", "verify", "--seal")
}

func TestTheRulesFileIsCheckedAtStartAndApplied(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, bad := range []struct{ body, want string }{
		{"rules:\n  - id: two\n    cont: 2\n    pool: admins\n", "field cont not found"},
		{"rules:\n  - id: two\n    count: 2\n    pool: wizards\n", "rule 1 (two): INVALID_ARGUMENT: pool: must be owners, admins"},
		{"rules:\n  - id: two\n    count: 2\n    pool: admins\n  - id: two\n    count: 3\n    pool: admins\n", "named twice"},
		{"rules:\n  - id: builtin-roll\n    remove: true\n    count: 2\n", "a rule with remove: true names only its id"},
	} {
		env := map[string]string{"COUNTERSIGN_DATA": t.TempDir(), "COUNTERSIGN_RULES": write("bad.yaml", bad.body)}
		r := cli(t, env, "account", "list", "--init")
		if r.code == 0 || !strings.Contains(r.stderr, "COUNTERSIGN_RULES") || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("a bad rules file (%q) let the command run: %s\nwant a failure saying %q", bad.body, r, bad.want)
		}
	}

	good := write("rules.yaml", "rules:\n  - id: reviews-by-two\n    kinds: [review]\n    count: 2\n    pool: admins\n    remind_every: 10m\n  - id: builtin-roll\n    remove: true\n")
	cfg := apptest.Config(t, apptest.SQLite, map[string]string{"COUNTERSIGN_RULES": good})
	env := apptest.StartWith(t, cfg)
	ctx := context.Background()
	r, err := env.Store.RuleByID(ctx, env.Account.ID, "reviews-by-two")
	if err != nil || r.Count != 2 || r.CreatedBy != "file:"+good {
		t.Fatalf("the file's rule: %+v %v", r, err)
	}
	if _, err := env.Store.RuleByID(ctx, env.Account.ID, rules.RuleRoll); core.CodeOf(err) != core.NotFound {
		t.Fatalf("the file removed builtin-roll, but it is there: %v", err)
	}
	// Applied again (a restart), nothing changes and nothing more is audited.
	if err := app.ApplyRulesFile(ctx, env.Store, cfg.Rules); err != nil {
		t.Fatal(err)
	}
	var n int64
	env.Store.DB().Table("events").Where("step IN ?", []string{rules.StepRuleSet, rules.StepRuleRemoved}).Count(&n)
	if n != 2 {
		t.Fatalf("%d rule events after applying the file twice, want 2", n)
	}
}

// twoPersonScene is a service where documents need two of the admins (ada,
// the owner, and bob, an admin), with an agent that files them.
type twoPersonScene struct {
	env      *apptest.Env
	ada, bob *apptest.Browser
	agent    *apptest.Client
}

func newTwoPersonScene(t *testing.T) *twoPersonScene {
	t.Helper()
	env := apptest.StartWeb(t, apptest.SQLite, nil)
	s := &twoPersonScene{env: env, ada: env.Join(env.Account.ID, core.RoleOwner, "ada"), bob: env.Join(env.Account.ID, core.RoleAdmin, "bob")}
	if _, err := env.Store.SetRule(context.Background(), env.Account.ID, "two-for-documents", rules.RuleSpec{Kinds: []string{"document"}, Count: 2,
		Pool: rules.Pool{Kind: rules.PoolRole, Role: rules.PoolAdmins}}, "cli:test"); err != nil {
		t.Fatal(err)
	}
	_, token := env.Agent(env.Account.ID, "bot")
	s.agent = env.Connect(token)
	return s
}

// document files a document ask the rule covers and returns its id.
func (s *twoPersonScene) document(t *testing.T) string {
	t.Helper()
	out := s.agent.OK("approvals_create", map[string]any{"kind": "document", "title": "Sign the contract", "summary": "The contract.",
		"approve_means": "it is signed", "deny_means": "it is not",
		"payload": map[string]any{"document": map[string]any{"document_id": "doc_1", "space_id": "space_1", "version": 3}},
		"context": map[string]any{"no_context_reason": "a test"}})
	return out["approval_id"].(string)
}

// writeFile writes raw into a new file of dir and returns its path.
func writeFile(t *testing.T, dir, name string, raw []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVerifyChecksABundleOfTwoSignaturesOffline(t *testing.T) {
	s := newTwoPersonScene(t)
	env := s.env
	ctx := context.Background()
	id := s.document(t)
	for _, b := range []*apptest.Browser{s.ada, s.bob} {
		if r := b.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("approve: %s", r)
		}
	}
	a, err := env.Store.GetApproval(ctx, env.Account.ID, id)
	if err != nil || a.Proof == nil {
		t.Fatalf("the approval has no proof: %v", err)
	}
	dir := t.TempDir()
	bundle, keys := filepath.Join(dir, "bundle.json"), filepath.Join(dir, "keys.json")
	os.WriteFile(bundle, []byte(*a.Proof), 0o600)
	os.WriteFile(keys, env.KeysExport(env.Account.ID), 0o600)
	ok := mustCLI(t, nil, "verify", bundle, "--keys", keys, "--origin", env.URL)
	if !strings.Contains(ok.stdout, "VALID: the 2 signature(s)") || !strings.Contains(ok.stdout, "2 of admins (rule two-for-documents)") {
		t.Fatalf("verify said:\n%s", ok)
	}
	b, _ := proof.ParseBundle([]byte(*a.Proof))
	b.Proofs = b.Proofs[1:]
	raw, _ := json.Marshal(b)
	dropped := filepath.Join(dir, "dropped.json")
	os.WriteFile(dropped, raw, 0o600)
	r := cli(t, nil, "verify", dropped, "--keys", keys, "--origin", env.URL)
	if r.code != 1 || !strings.Contains(r.stderr, "quorum: 1 distinct people approved, the requirement (rule two-for-documents) needs 2") {
		t.Fatalf("verify of a bundle missing a signature: %s", r)
	}
}
