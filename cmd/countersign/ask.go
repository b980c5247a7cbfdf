package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/mcp/gate"
)

const askUsage = `usage: countersign ask --title TEXT [--approve-means TEXT] [--deny-means TEXT] [--kind KIND] [--payload JSON]
                 [--timeout 10m] [--proof FILE] [--url URL] [--token-file F]
  files an ask as an agent, waits for a person's signed answer and prints it:
  exit 0 approved, 1 denied (or, on a decision, any option but the first), 2 no answer
  (expired, withdrawn, or --timeout passed: the ask is then withdrawn), 3 the ask was
  not filed or the wait broke (usage, connection, token).
  countersign ask --title "Deploy api to production" && ./deploy.sh

  --kind defaults to decision, which no standing policy answers: a person signs every
  one. Its default payload is {"options": ["Go ahead", "Not now"]}; the first option
  is the go-ahead. --payload is the kind's member ({"options": [...]}, or the whole
  {"KIND": {...}}). --proof FILE saves the signed proof, which countersign verify checks.

Environment: COUNTERSIGN_URL (the service's base URL; --url overrides it) and
COUNTERSIGN_TOKEN (an agent token with the approvals scopes; --token-file F reads
it from a file instead: a token on the command line shows in ps).`

// Exit codes of countersign ask, which a script reads.
const (
	askApproved = 0
	askDenied   = 1
	askNoAnswer = 2
	askBroken   = 3
)

// exitCode ends the command with code, after printing err when there is one.
type exitCode struct {
	code int
	err  error
}

func (e exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// askGoAhead is the default decision's options: the first is the go-ahead.
var askGoAhead = []string{"Go ahead", "Not now"}

// askCommand files an ask from a shell or CI step with an agent token, as
// an agent does over MCP, and waits for the person's answer: its exit code
// makes `countersign ask … && ./deploy.sh` run the script only on a
// person's signed yes.
func askCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	broken := func(format string, a ...any) error {
		return exitCode{askBroken, fmt.Errorf(format, a...)}
	}
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	title := fs.String("title", "", "one line, at most 120 characters: what the person is asked (a push shows only this)")
	approveMeans := fs.String("approve-means", "The step that waits for this answer goes ahead", "what approving makes happen")
	denyMeans := fs.String("deny-means", "The step stops; nothing runs", "what denying makes happen")
	kind := fs.String("kind", ask.KindDecision, "the kind of ask: "+strings.Join(ask.Kinds, ", "))
	payload := fs.String("payload", "", "the kind's payload as JSON")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait for an answer; then the ask is withdrawn")
	proofFile := fs.String("proof", "", "save the signed proof to FILE")
	baseURL := fs.String("url", getenv("COUNTERSIGN_URL"), "the service's base URL")
	tokenFile := fs.String("token-file", "", "a file holding the agent token")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return broken("ask: %s\n%s", usageReason(err, fs.Args()), askUsage)
	}
	switch {
	case strings.TrimSpace(*title) == "":
		return broken("ask: --title is required\n%s", askUsage)
	case *timeout <= 0:
		return broken("ask: --timeout must be positive, like 10m")
	case *baseURL == "":
		return broken("ask: set COUNTERSIGN_URL (or --url) to the service's base URL")
	}
	token := getenv("COUNTERSIGN_TOKEN")
	if *tokenFile != "" {
		raw, err := os.ReadFile(*tokenFile)
		if err != nil {
			return broken("ask: read the token: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	if token == "" {
		return broken("ask: set COUNTERSIGN_TOKEN (or --token-file F) to an agent token with the approvals scopes")
	}
	frozen, err := askPayload(*kind, *payload)
	if err != nil {
		return broken("ask: --payload: %w", err)
	}

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sink, err := gate.NewCountersign(cctx, gate.CountersignOptions{URL: *baseURL, Token: token})
	cancel()
	if err != nil {
		return broken("ask: Countersign at %s: %w", *baseURL, err)
	}
	defer sink.Close()
	host, _ := os.Hostname()
	create := map[string]any{
		"kind":          *kind,
		"title":         *title,
		"approve_means": *approveMeans,
		"deny_means":    *denyMeans,
		"agent":         clip("countersign ask on "+host, 64),
		"payload":       frozen,
		"context":       map[string]any{"no_context_reason": "filed from a shell or CI step with countersign ask on " + host},
	}
	t, err := sink.FileAsk(ctx, create)
	if err != nil {
		return broken("ask: %w", err)
	}
	fmt.Fprintf(stderr, "countersign ask: %s is waiting for a person's answer until %s: %s\n", t.ID,
		time.Now().Add(*timeout).Format("15:04:05 MST"), t.URL)
	if t.CheckCode != "" {
		fmt.Fprintf(stderr, "countersign ask: its check code is %s: the person taps it on the ask page\n", t.CheckCode)
	}

	wctx, cancel := context.WithTimeout(ctx, *timeout)
	a, err := sink.AwaitAnswer(wctx, t.ID)
	cancel()
	if err != nil {
		sink.Withdraw(ctx, t) // a yes that comes later must never count
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			fmt.Fprintf(stdout, "no answer within %s: %s is withdrawn\n", *timeout, t.ID)
			return exitCode{askNoAnswer, nil}
		}
		return broken("ask: waiting for %s: %w (the ask is withdrawn)", t.ID, err)
	}
	code := askOutcome(*kind, a)
	switch code {
	case askApproved:
		fmt.Fprintf(stdout, "approved by %s: %s%s\n", a.DecidedBy, t.ID, chosen(a))
	case askDenied:
		fmt.Fprintf(stdout, "%s by %s: %s%s\n", answerWord(a), a.DecidedBy, t.ID, chosen(a))
	default:
		fmt.Fprintf(stdout, "no answer: %s is %s\n", t.ID, a.Status)
	}
	if *proofFile != "" {
		if len(a.Proof) == 0 || string(a.Proof) == "null" {
			fmt.Fprintf(stderr, "countersign ask: no proof to save: %s is %s, which nobody signed\n", t.ID, a.Status)
		} else {
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, a.Proof, "", "  "); err != nil {
				return broken("ask: the proof: %w", err)
			}
			pretty.WriteByte('\n')
			if err := os.WriteFile(*proofFile, pretty.Bytes(), 0o644); err != nil {
				return broken("ask: save the proof: %w", err)
			}
		}
	}
	return exitCode{code, nil}
}

// askOutcome is the exit code of an ask that no longer waits: 0 only for a
// person's approve (on a decision, the pick of its first option).
func askOutcome(kind string, a gate.Answer) int {
	switch a.Status {
	case "approved", "in_progress", "done", "failed":
		if kind == ask.KindDecision && a.Decision != "option:0" {
			return askDenied
		}
		return askApproved
	case "denied", "cancelled":
		return askDenied
	}
	return askNoAnswer // expired, stale
}

// answerWord names a no: denied, or the option a person picked instead.
func answerWord(a gate.Answer) string {
	if a.Status == "approved" {
		return "answered"
	}
	return a.Status
}

// chosen is a decision's picked option, or the person's note, for the line printed.
func chosen(a gate.Answer) string {
	if a.Note == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", a.Note)
}

// askPayload is the frozen payload of an ask of kind: raw as the kind's
// member, or as the whole {"KIND": {...}}; a decision's default when raw is empty.
func askPayload(kind, raw string) (json.RawMessage, error) {
	if strings.TrimSpace(raw) == "" {
		if kind != ask.KindDecision {
			return nil, fmt.Errorf("a %s ask needs its payload", kind)
		}
		return json.Marshal(map[string]any{kind: map[string]any{"options": askGoAhead}})
	}
	var member map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &member); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, whole := member[kind]; whole && len(member) == 1 {
		return json.RawMessage(raw), nil
	}
	return json.Marshal(map[string]json.RawMessage{kind: json.RawMessage(raw)})
}

// usageReason says what was wrong with a command line flag.Parse refused,
// or the first word it did not take.
func usageReason(err error, rest []string) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("unexpected %q", rest[0])
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
