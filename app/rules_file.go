package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"time"

	"go.yaml.in/yaml/v3"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/rules"
)

// RulesFile is COUNTERSIGN_RULES read and checked: the approval rules an
// operator keeps in git, set (or removed) in their accounts at every start.
// A rule the file does not name is left as it is.
type RulesFile struct {
	Path  string
	Rules []FileRule
}

// FileRule is one rule of the file, checked.
type FileRule struct {
	Account string // the account's name; "default" when the file does not say
	ID      string
	Remove  bool
	Spec    rules.RuleSpec
}

// fileRule is a rule as the YAML file writes it: a pool is a word
// (models.ParsePool), a duration Go's text ("30m").
type fileRule struct {
	ID            string   `yaml:"id"`
	Account       string   `yaml:"account"`
	Remove        bool     `yaml:"remove"`
	Name          string   `yaml:"name"`
	Kinds         []string `yaml:"kinds"`
	Effects       []string `yaml:"effects"`
	Servers       []string `yaml:"servers"`
	Tools         []string `yaml:"tools"`
	Requesters    []string `yaml:"requesters"`
	MinPriority   int      `yaml:"min_priority"`
	Count         int      `yaml:"count"`
	Pool          string   `yaml:"pool"`
	ApplyFrom     int      `yaml:"apply_from"`
	EscalateTo    string   `yaml:"escalate_to"`
	EscalateAfter string   `yaml:"escalate_after"`
	RemindEvery   string   `yaml:"remind_every"`
}

// ReadRulesFile reads and checks the rules file at path: YAML with one
// member, rules, a list of rules; unknown members, bad pools, kinds or
// durations, and a rule named twice are refused with the rule and field at
// fault, so that a bad file fails the start and changes nothing.
func ReadRulesFile(path string) (*RulesFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the rules file: %w", err)
	}
	var doc struct {
		Rules []fileRule `yaml:"rules"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s is not a rules file (YAML: rules: [{id, count, pool, …}]): %w", path, err)
	}
	out := &RulesFile{Path: path}
	seen := map[string]bool{}
	for i, r := range doc.Rules {
		where := fmt.Sprintf("%s: rule %d (%s)", path, i+1, r.ID)
		fr := FileRule{Account: r.Account, ID: r.ID, Remove: r.Remove}
		if fr.Account == "" {
			fr.Account = people.DefaultAccountName
		}
		if seen[fr.Account+"/"+r.ID] {
			return nil, fmt.Errorf("%s: named twice in account %s", where, fr.Account)
		}
		seen[fr.Account+"/"+r.ID] = true
		if r.Remove {
			if r.Count != 0 || r.Pool != "" || len(r.Kinds) > 0 || r.Name != "" {
				return nil, fmt.Errorf("%s: a rule with remove: true names only its id (and account)", where)
			}
			if err := rules.CheckRule(r.ID, &rules.RuleSpec{Count: 1, Pool: rules.Pool{Kind: rules.PoolRole, Role: rules.PoolAdmins}}); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			out.Rules = append(out.Rules, fr)
			continue
		}
		spec := rules.RuleSpec{Name: r.Name, Kinds: r.Kinds, Effects: r.Effects, Servers: r.Servers, Tools: r.Tools,
			Requesters: r.Requesters, MinPriority: r.MinPriority, Count: r.Count, ApplyFrom: r.ApplyFrom}
		if spec.Pool, err = rules.ParsePool(r.Pool); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if r.EscalateTo != "" {
			if spec.EscalateTo, err = rules.ParsePool(r.EscalateTo); err != nil {
				return nil, fmt.Errorf("%s: escalate_to: %w", where, err)
			}
		}
		for _, f := range []struct {
			name, text string
			to         *rules.Duration
		}{{"escalate_after", r.EscalateAfter, &spec.EscalateAfter}, {"remind_every", r.RemindEvery, &spec.RemindEvery}} {
			if f.text == "" {
				continue
			}
			d, err := time.ParseDuration(f.text)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %q is not a duration like 30m", where, f.name, f.text)
			}
			*f.to = rules.Duration(d)
		}
		if err := rules.CheckRule(r.ID, &spec); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		fr.Spec = spec
		out.Rules = append(out.Rules, fr)
	}
	return out, nil
}

// ApplyRulesFile sets and removes the file's rules in their accounts, each
// change on the account's audit chain as made by "file:<path>"; a rule
// already as the file says is left alone, so a restart audits nothing.
func ApplyRulesFile(ctx context.Context, store *models.Store, f *RulesFile) error {
	by := "file:" + f.Path
	for _, r := range f.Rules {
		acct, err := store.AccountByName(ctx, r.Account)
		if err != nil {
			return fmt.Errorf("%s: rule %s: account %q: %w", f.Path, r.ID, r.Account, err)
		}
		if r.Remove {
			if err := store.RemoveRule(ctx, acct.ID, r.ID, by); err != nil && core.CodeOf(err) != core.NotFound {
				return fmt.Errorf("%s: remove rule %s: %w", f.Path, r.ID, err)
			}
			continue
		}
		if _, err := store.SetRule(ctx, acct.ID, r.ID, r.Spec, by); err != nil {
			return fmt.Errorf("%s: rule %s: %w", f.Path, r.ID, err)
		}
	}
	return nil
}
