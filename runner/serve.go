package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp/bearer"
	"github.com/countersign/countersign/proof"
)

// Options configure runner serve.
type Options struct {
	Server    string        // the service's base URL, as people open it
	Token     string        // the runner token from enrollment
	Poll      time.Duration // how often it lists its runs besides being told (default 30 s)
	TimeLimit time.Duration // how long one run may take (default 10 min)
	Parallel  int           // how many runs it executes at once (default DefaultParallel; 1: one after another)
	// MinSignersProduction is the fewest distinct people whose approvals a
	// production run's proof must hold for this runner to run it, whatever
	// the server requires (default 1: the server's requirement alone).
	MinSignersProduction int
	Logger               *slog.Logger
}

// DefaultParallel is how many runs a runner executes at once unless told:
// enough that a long deploy does not hold back every other approved run.
const DefaultParallel = 4

// Limits on what a run's output becomes on the timeline.
const (
	stepNoteRunes = 480      // one step note (the server takes at most 500 characters)
	maxOutput     = 16 << 10 // bytes of output reported at most; the rest is counted, not sent
	flushEvery    = time.Second
	// RestartedNote is the failed note of a run a runner claimed before it restarted.
	RestartedNote = "runner restarted; not run again"
)

// runnerTokenPrefix starts a runner token; the runner's id follows, up to a dot.
const runnerTokenPrefix = "cs_runner_"

// RunnerIDOfToken reads the runner's id out of its token.
func RunnerIDOfToken(token string) (string, error) {
	rest, ok := strings.CutPrefix(token, runnerTokenPrefix)
	id, _, dot := strings.Cut(rest, ".")
	if !ok || !dot || !strings.HasPrefix(id, "rnr_") {
		return "", errors.New("not a runner token (cs_runner_rnr_….…): enroll the runner with countersign runner enroll")
	}
	return id, nil
}

// Runner is a running runner serve: a loaded host, its connection to the
// service and the runs it is handling.
type Runner struct {
	host     *Host
	opts     Options
	id       string
	origin   string
	log      *slog.Logger
	wake     chan struct{}
	slots    chan struct{}           // one held by each run in hand: at most Parallel
	runs     sync.WaitGroup          // the runs in hand, awaited before Serve returns
	executed func(approvalID string) // tests hear of each execution
	listed   func()                  // tests hear of each listing of its runs

	mu      sync.Mutex
	session *sdk.ClientSession // the current connection; a run in hand reports on whichever is current
	inHand  map[string]bool    // approval ids of the runs being handled, never picked up twice
	signed  map[string]int64   // the signed_at of the last report of each run in hand (nextSignedAt)
	// waiting is set when a pass found every slot busy: the next run to end
	// wakes the loop for another pass. A run that ends with nobody waiting
	// wakes nothing, so a run handled at once (another host's, or one this
	// host has finished) is not taken again and again.
	waiting bool
}

// New checks the options and makes a runner of host.
func New(host *Host, opts Options) (*Runner, error) {
	id, err := RunnerIDOfToken(opts.Token)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(opts.Server)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("--server %q is not the service's base URL", opts.Server)
	}
	if opts.Poll <= 0 {
		opts.Poll = 30 * time.Second
	}
	if opts.TimeLimit <= 0 {
		opts.TimeLimit = 10 * time.Minute
	}
	if opts.Parallel <= 0 {
		opts.Parallel = DefaultParallel
	}
	if opts.MinSignersProduction <= 0 {
		opts.MinSignersProduction = 1
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Runner{host: host, opts: opts, id: id, origin: u.Scheme + "://" + u.Host, log: opts.Logger.With("runner", id),
		wake: make(chan struct{}, 1), slots: make(chan struct{}, opts.Parallel), inHand: map[string]bool{}, signed: map[string]int64{}}, nil
}

// Serve runs until ctx ends: it subscribes to its runs, lists them now and
// every Poll, and handles each approved one once, up to Parallel at a time.
// When ctx ends, the scripts still running are killed, as at their time
// limit, and Serve returns once every run in hand has ended.
func (r *Runner) Serve(ctx context.Context) error {
	defer r.runs.Wait()
	for wait := time.Second; ctx.Err() == nil; wait = min(wait*2, 30*time.Second) {
		err := r.connected(ctx, func() { wait = time.Second })
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("connection to the service lost; reconnecting", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}

func (r *Runner) connected(ctx context.Context, ok func()) error {
	client := sdk.NewClient(&sdk.Implementation{Name: "countersign-runner", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(context.Context, *sdk.ResourceUpdatedNotificationRequest) { r.poke() },
	})
	transport := &sdk.StreamableClientTransport{Endpoint: strings.TrimRight(r.opts.Server, "/") + "/mcp",
		HTTPClient: &http.Client{Transport: bearer.Transport{Token: r.opts.Token}}}
	// A session (2025-11-25): its resources/subscribe is answered once the
	// subscription holds, and a lost session ends Wait; the SDK's 2026-07-28
	// Subscribe returns before the service has the subscription, and a poke
	// sent in between would be missed.
	session, err := client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	r.mu.Lock()
	r.session = session
	r.mu.Unlock()
	if err := session.Subscribe(ctx, &sdk.SubscribeParams{URI: "countersign://runners/" + r.id + "/runs"}); err != nil {
		return fmt.Errorf("subscribe to its runs: %w", err)
	}
	ok()
	tick := time.NewTicker(r.opts.Poll)
	defer tick.Stop()
	for {
		if err := r.pass(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case <-r.wake:
		}
	}
}

func (r *Runner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// pass lists the runner's active runs and hands each one not yet in hand
// to a goroutine of its own, nearest deadline first, while a slot is free. A
// run left over waits for a later pass: the next run to end starts one.
func (r *Runner) pass(ctx context.Context) error {
	var list struct {
		Approvals []Approval `json:"approvals"`
	}
	if r.listed != nil {
		r.listed()
	}
	if err := r.call(ctx, "approvals_list", map[string]any{"status": "active", "page_size": 200}, &list); err != nil {
		return fmt.Errorf("list its runs: %w", err)
	}
	// The run whose deadline comes first goes first, so that a queue never
	// lets a run expire while a later one runs; on a tie the older one.
	runs := slices.Clone(list.Approvals)
	slices.Reverse(runs) // the list is newest first
	slices.SortStableFunc(runs, func(a, b Approval) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
	for _, a := range runs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if a.Status != "approved" && !r.journaled(a.ApprovalID) {
			continue // in progress under another host's claim
		}
		r.mu.Lock()
		taken := r.inHand[a.ApprovalID]
		r.mu.Unlock()
		if taken {
			continue
		}
		if !r.takeSlot() {
			return nil // every slot is busy
		}
		r.take(ctx, a.ApprovalID, a.Status)
	}
	return nil
}

// take handles one run in a goroutine of its own, holding a slot.
func (r *Runner) take(ctx context.Context, id, status string) {
	r.mu.Lock()
	r.inHand[id] = true
	r.mu.Unlock()
	r.runs.Add(1)
	go func() {
		defer r.runs.Done()
		defer func() {
			r.mu.Lock()
			delete(r.inHand, id)
			delete(r.signed, id)
			<-r.slots
			waiting := r.waiting
			r.waiting = false
			r.mu.Unlock()
			if waiting {
				r.poke() // a run waiting for a slot starts now
			}
		}()
		if err := r.handle(ctx, id, status); err != nil && ctx.Err() == nil {
			r.log.Error("handle a run", "approval", id, "err", err)
		}
	}()
}

// takeSlot takes a free slot, or says there is none and notes that a run
// waits for one. It and the release of a slot hold mu, so a slot given back
// just after a pass found none always wakes the loop.
func (r *Runner) takeSlot() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case r.slots <- struct{}{}:
		return true
	default:
		r.waiting = true
		return false
	}
}

// journaled says whether the run has an entry in this host's journal.
func (r *Runner) journaled(id string) bool {
	_, err := os.Stat(r.journalPath(id))
	return !errors.Is(err, os.ErrNotExist)
}

func (r *Runner) journalPath(id string) string {
	return filepath.Join(r.host.Dir, JournalDir, filepath.Base(id)+".json")
}

// refusedError is a tool call the service refused (isError), with its text.
type refusedError struct{ text string }

func (e *refusedError) Error() string { return e.text }

// Lost says whether the service refused a claim because the run was no
// longer approved: another runner process claimed it first.
func lost(err error) bool {
	var re *refusedError
	return errors.As(err, &re) && strings.HasPrefix(re.text, "FAILED_PRECONDITION")
}

func (r *Runner) call(ctx context.Context, tool string, args any, out any) error {
	r.mu.Lock()
	session := r.session
	r.mu.Unlock()
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		return &refusedError{text: text}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal([]byte(text), out)
}

// report sends one signed report.
func (r *Runner) report(ctx context.Context, approvalID, payloadSHA256, step, note, expected string) error {
	sig := proof.SignRunnerReport(r.host.Key, r.id, approvalID, payloadSHA256, step, note, r.nextSignedAt(approvalID))
	args := map[string]any{"approval_id": approvalID, "step": step, "note": note, "runner": sig}
	if expected != "" {
		args["expected_state"] = expected
	}
	return r.call(ctx, "approvals_add_progress", args, nil)
}

// nextSignedAt is the signed_at of a new report of a run: now, or a second
// past the run's last report when that one was signed this second. Two
// reports of a run never sign the same bytes, so two chunks of the same
// output sent within a second are not one signature twice, which the
// service refuses as a replay.
func (r *Runner) nextSignedAt(approvalID string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := max(time.Now().Unix(), r.signed[approvalID]+1)
	r.signed[approvalID] = at
	return at
}

// handle takes one active run through its life, once. The journal file of
// the run is locked while this process handles it, so two processes sharing
// the folder never both act on it; an unfinished journal entry this process
// did not write in this pass is a claim from before a restart, and the run
// is reported failed, never executed. A run that fails Check, or the
// runner's own minimum of signers (belowMinimum), is claimed and reported
// failed with the reason, never executed.
func (r *Runner) handle(ctx context.Context, id, status string) error {
	if status != "approved" && !r.journaled(id) {
		return nil // in progress under another host's claim
	}
	j, err := openJournal(r.journalPath(id))
	if errors.Is(err, errLocked) {
		return nil // another process of this host has it
	}
	if err != nil {
		return err
	}
	defer j.close()
	switch j.State {
	case stateFinished, stateLost:
		return nil
	case stateClaiming, stateClaimed, stateRunning:
		return r.reportRestart(ctx, j, status)
	}

	var a Approval
	if err := r.call(ctx, "approvals_get", map[string]any{"approval_id": id}, &a); err != nil {
		j.remove()
		return fmt.Errorf("read run %s: %w", id, err)
	}
	if a.Status != "approved" {
		j.remove()
		return nil
	}
	plan, err := r.host.Check(&a, r.origin, time.Now())
	if err == nil {
		if below := r.belowMinimum(plan); below != nil {
			err = below
		}
	}
	if errors.Is(err, ErrNotMine) {
		j.remove()
		return nil
	}
	var refusal *Refusal
	if err != nil && !errors.As(err, &refusal) {
		j.remove()
		return err
	}
	j.ApprovalID, j.PayloadSHA256 = a.ApprovalID, a.PayloadSHA256
	if err := j.set(stateClaiming, ""); err != nil {
		return err
	}
	claim := "claimed by runner " + r.id
	if refusal != nil {
		claim = "claimed by runner " + r.id + " to refuse it"
	}
	if err := r.report(ctx, a.ApprovalID, a.PayloadSHA256, "started", claim, "approved"); err != nil {
		if lost(err) {
			r.log.Info("another runner claimed the run first", "approval", id)
			return j.set(stateLost, err.Error())
		}
		return fmt.Errorf("claim run %s: %w", id, err) // the journal keeps the claim: it is never run
	}
	if refusal != nil {
		if err := j.set(stateClaimed, refusal.Reason); err != nil {
			return err
		}
		r.log.Warn("refused a run", "approval", id, "reason", refusal.Reason)
		return r.finish(ctx, j, "failed", clip("refused by the runner: "+refusal.Reason, 500))
	}
	if err := j.set(stateRunning, ""); err != nil {
		return err
	}
	step, note := r.execute(ctx, plan)
	return r.finish(ctx, j, step, note)
}

func (r *Runner) reportRestart(ctx context.Context, j *journal, status string) error {
	r.log.Warn("a run claimed before a restart is reported failed and not run again", "approval", j.ApprovalID)
	if status == "approved" {
		if err := r.report(ctx, j.ApprovalID, j.PayloadSHA256, "started", "claimed by runner "+r.id+" before it restarted", "approved"); err != nil {
			if lost(err) {
				return j.set(stateLost, err.Error())
			}
			return err
		}
	}
	return r.finish(ctx, j, "failed", RestartedNote)
}

func (r *Runner) finish(ctx context.Context, j *journal, step, note string) error {
	if err := r.report(ctx, j.ApprovalID, j.PayloadSHA256, step, note, "in_progress"); err != nil {
		if !lost(err) {
			return fmt.Errorf("report %s on %s: %w", step, j.ApprovalID, err)
		}
	}
	return j.set(stateFinished, step+": "+note)
}

// execute runs the plan's argv with no shell, a clean environment, the
// scripts folder as working directory and the time limit, reporting its
// output as signed step notes, and says how it ended. What runs is the
// script's bytes that Check read and hashed, copied into a private folder:
// a change to the file after the check cannot slip in between.
func (r *Runner) execute(ctx context.Context, plan *Plan) (step, note string) {
	if r.executed != nil {
		r.executed(plan.ApprovalID)
	}
	runCtx, cancel := context.WithTimeout(ctx, r.opts.TimeLimit)
	defer cancel()
	root, err := filepath.EvalSymlinks(r.host.Scripts)
	if err != nil {
		return "failed", clip("the scripts folder: "+err.Error(), 500)
	}
	private, err := os.MkdirTemp("", "countersign-run-")
	if err != nil {
		return "failed", clip("a private copy of the script: "+err.Error(), 500)
	}
	defer os.RemoveAll(private)
	verified := filepath.Join(private, filepath.Base(plan.Script))
	// No fork of this process (another run starting) may inherit the copy's
	// open descriptor, which would leave it "text file busy" to exec.
	syscall.ForkLock.RLock()
	err = os.WriteFile(verified, plan.Code, 0o500)
	syscall.ForkLock.RUnlock()
	if err != nil {
		return "failed", clip("a private copy of the script: "+err.Error(), 500)
	}
	// A file just written may still be "text file busy" for a moment, while
	// a fork elsewhere (not through os/exec) holds its descriptor: try again.
	var (
		cmd *exec.Cmd
		out *io.PipeReader
		w   *io.PipeWriter
	)
	for try := 0; ; try++ {
		cmd = exec.CommandContext(runCtx, verified, plan.Argv[1:]...)
		cmd.Args[0] = plan.Argv[0]
		cmd.Dir = root
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "COUNTERSIGN_APPROVAL_ID=" + plan.ApprovalID}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		out, w = io.Pipe()
		cmd.Stdout, cmd.Stderr = w, w
		err = cmd.Start()
		if !errors.Is(err, syscall.ETXTBSY) || try == 20 {
			break
		}
		w.Close()
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return "failed", clip("the script did not start: "+err.Error(), 500)
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		w.Close()
		waited <- err
	}()
	r.stream(ctx, plan, out)
	err = <-waited
	switch {
	case runCtx.Err() == context.DeadlineExceeded:
		return "failed", fmt.Sprintf("time limit %s reached; the script was killed", r.opts.TimeLimit)
	case err == nil:
		return "done", "exit status 0"
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "failed", clip(fmt.Sprintf("exit status %d (%s)", exit.ExitCode(), exit.ProcessState), 500)
	}
	return "failed", clip("the script: "+err.Error(), 500)
}

// stream reads the script's output and reports it as signed steps of at
// most stepNoteRunes characters, sent at least every flushEvery, up to
// maxOutput bytes; the rest is counted in a last step.
func (r *Runner) stream(ctx context.Context, plan *Plan, out io.Reader) {
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var (
		buf     strings.Builder
		sent    int
		dropped int
	)
	flush := func() {
		if buf.Len() == 0 {
			return
		}
		if err := r.report(ctx, plan.ApprovalID, plan.PayloadSHA256, "step", buf.String(), "in_progress"); err != nil {
			r.log.Warn("report output", "approval", plan.ApprovalID, "err", err)
		}
		buf.Reset()
	}
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				flush()
				if dropped > 0 {
					buf.WriteString(fmt.Sprintf("(%d more bytes of output not reported)", dropped))
					flush()
				}
				return
			}
			if sent+len(line) > maxOutput {
				dropped += len(line) + 1
				continue
			}
			sent += len(line) + 1
			line = clip(line, stepNoteRunes)
			if utf8.RuneCountInString(buf.String())+utf8.RuneCountInString(line)+1 > stepNoteRunes {
				flush()
			}
			if buf.Len() > 0 {
				buf.WriteByte('\n')
			}
			buf.WriteString(line)
		case <-tick.C:
			flush()
		}
	}
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
