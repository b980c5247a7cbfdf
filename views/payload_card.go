package views

import (
	"strings"

	"github.com/countersign/countersign/models"
)

// CardRow is one line of the payload card: what the signature covers, in
// a few words, with its values. Values past CardFold fold behind "+N more".
type CardRow struct {
	Label  string
	Values []string
	Code   bool // the values are identifiers, commands or arguments: set as code
}

// CardFold is how many values of a row the payload card shows unfolded.
const CardFold = 3

// cardValueRunes is how much of one value the card shows; the whole value
// is in "What you sign" below, and in the canonical JSON.
const cardValueRunes = 100

// Shown are the values the card shows unfolded.
func (r CardRow) Shown() []string { return r.Values[:min(len(r.Values), CardFold)] }

// Folded are the values behind "+N more".
func (r CardRow) Folded() []string {
	if len(r.Values) <= CardFold {
		return nil
	}
	return r.Values[CardFold:]
}

// PayloadCard is the signed payload in a few lines, for the first screen,
// above anything the agent wrote: the tool and its arguments, a roll's
// deployments and commits, a run's argv and host, and so on by kind. Nil
// for an ask whose payload has no view (its canonical text is below).
func (a Ask) PayloadCard() []CardRow {
	p := a.Payload
	one := func(label, v string, code bool) CardRow {
		return CardRow{Label: label, Values: []string{v}, Code: code}
	}
	switch {
	case a.Request != nil:
		r := a.Request
		rows := []CardRow{}
		if m := r.Move; m != nil {
			rows = append(rows, one("Moves", m.Item+" → "+m.To, false))
		} else {
			rows = append(rows, one("Proposal", "advisory: nothing executes", false))
		}
		if c := a.Choices(); len(c) > 0 {
			rows = append(rows, CardRow{Label: "Choices", Values: c})
		}
		return rows
	case p.PullRequest != nil:
		pr := p.PullRequest
		return []CardRow{one("Merges", pr.Repo+"#"+pr.Number.String(), true), one("At commit", shortSHA(pr.Head), true), one("Pull request", pr.Title, false)}
	case p.Roll != nil:
		return rollCard(p.Roll)
	case p.Run != nil:
		r := p.Run
		host := r.RunnerID
		if a.RunnerName != "" {
			host = a.RunnerName
		}
		rows := []CardRow{one("Runs", argvText(r), true), one("On", host, true), one("Effect", words(r.Effect), false)}
		if r.Roll != nil {
			rows = append(rows, rollCard(r.Roll)...)
		}
		return rows
	case p.ToolCall != nil:
		tc := p.ToolCall
		rows := []CardRow{one("Tool", tc.Tool+" on "+tc.Server, true)}
		args := ArgumentRows(tc)
		vals := make([]string, len(args))
		for i, arg := range args {
			vals[i] = arg.Name + " = " + clip(arg.Value)
		}
		if len(vals) == 0 {
			vals = []string{"no arguments"}
		}
		return append(rows, CardRow{Label: "Arguments", Values: vals, Code: len(args) > 0})
	case p.Review != nil:
		return []CardRow{one("Review", p.Review.URL, true)}
	case p.Document != nil:
		return []CardRow{one("Document", p.Document.DocumentID, true), one("Version", versionText(p.Document), false)}
	case p.Decision != nil:
		return []CardRow{{Label: "Options", Values: p.Decision.Options}}
	case p.AutoApprove != nil:
		aa := p.AutoApprove
		until := aa.Until
		if t := aa.UntilTime(); !t.IsZero() {
			until = stamp(t)
		}
		return []CardRow{one("Approves without asking", aa.Scope.KindsText(), false), one("Filed by", aa.Scope.RequestersText(), false), one("Until", until, false)}
	case p.Authorization != nil:
		return authorizationCard(p.Authorization)
	case p.RuleChange != nil:
		rc := p.RuleChange
		if rc.Action == models.RuleChangeRemove {
			return []CardRow{one("Removes", a.ruleLabel(), false), one("Rule id", rc.RuleID, true)}
		}
		rows := []CardRow{one("Sets", a.ruleLabel(), false), one("Rule id", rc.RuleID, true)}
		if rc.Rule != nil {
			rows = append(rows, one("Needs", rc.Rule.Summary(), false))
		}
		return rows
	}
	return nil
}

// ruleLabel names the rule a rule change changes: by name when it has one.
func (a Ask) ruleLabel() string {
	rc := a.Payload.RuleChange
	switch {
	case a.RuleName != "":
		return a.RuleName
	case rc.Rule != nil && rc.Rule.Name != "":
		return rc.Rule.Name
	}
	return rc.RuleID
}

// rollCard is a roll's card rows: its deployments, the commits it goes
// from and to, and what it ships.
func rollCard(r *Roll) []CardRow {
	to := shortSHA(r.MainCommit)
	if r.Behind != "" {
		to += " (" + r.Behind.String() + " commits)"
	}
	rows := []CardRow{
		{Label: "Deployments", Values: r.Deployments, Code: true},
		{Label: "Commits", Values: []string{shortSHA(r.RunningCommit) + " → " + to}, Code: true},
	}
	if len(r.PRs) > 0 {
		prs := make([]string, len(r.PRs))
		for i, pr := range r.PRs {
			prs[i] = "#" + pr.Number.String() + " " + pr.Title
		}
		rows = append(rows, CardRow{Label: "Pull requests", Values: prs})
	}
	if len(r.Migrations) > 0 {
		rows = append(rows, CardRow{Label: "Migrations", Values: r.Migrations, Code: true})
	}
	return rows
}

// shortSHA is a commit as people quote it: its first 12 characters.
func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// clip shortens a long value for the card, on one line (a line break
// shows as ↵); the whole value shows in "What you sign".
func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", "↵")
	if r := []rune(s); len(r) > cardValueRunes {
		return string(r[:cardValueRunes-1]) + "…"
	}
	return s
}
