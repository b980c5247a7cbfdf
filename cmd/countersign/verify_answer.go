package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/proof"
	"github.com/countersign/countersign/runner"
)

// approvalAnswer is an approvals_get answer, as verify reads it: what a
// runner reads of one.
type approvalAnswer = runner.Approval

// readApprovalAnswer reads raw as an approvals_get answer: an object with
// approval_id, payload_sha256 and a timeline, and no proof format of its own.
func readApprovalAnswer(raw []byte) (*approvalAnswer, bool) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		return nil, false
	}
	_, format := probe["format"]
	_, timeline := probe["timeline"]
	_, id := probe["approval_id"]
	if format || !timeline || !id {
		return nil, false
	}
	var a approvalAnswer
	if json.Unmarshal(raw, &a) != nil {
		return nil, false
	}
	return &a, true
}

// verifyAnswer checks an approvals_get answer offline: its payload hashes to
// payload_sha256; its decision proof is valid (as verify checks a proof) for
// this approval and payload; and, for a run, every report by a runner on its
// timeline is signed by payload.run.runner_public_key as payload.run.runner_id
// (docs/runners.md). It exits 0 only when all of it holds.
func verifyAnswer(a *approvalAnswer, file string, opts verifyOptions, out io.Writer) error {
	notValid := func(format string, args ...any) error {
		return fmt.Errorf("the approval in %s is NOT valid: "+format, append([]any{file}, args...)...)
	}
	_, sum, err := ask.CanonicalHash(a.Payload)
	if err != nil {
		return notValid("its payload is not I-JSON: %v", err)
	}
	if sum != a.PayloadSHA256 {
		return notValid("its payload does not hash to payload_sha256")
	}
	if len(a.Proof) == 0 || string(a.Proof) == "null" {
		return notValid("it carries no decision proof: nobody's device signed it (status %s)", a.Status)
	}
	var decision string
	if proof.IsBundle(a.Proof) {
		b, err := proof.ParseBundle(a.Proof)
		if err != nil {
			return notValid("its proof bundle is not a countersign bundle: %v", err)
		}
		if b.ApprovalID != a.ApprovalID || b.PayloadSHA256 != a.PayloadSHA256 {
			return notValid("its proof bundle is for approval %s and payload %s, not this one", b.ApprovalID, b.PayloadSHA256)
		}
		fmt.Fprintf(out, "Approval %s (%s, %s): its payload hashes to payload_sha256 %s.\n\nIts decision, signed by several people:\n", a.ApprovalID, a.Kind, a.Status, a.PayloadSHA256)
		if decision, err = verifyBundle(a.Proof, file+" (its proof bundle)", opts, out); err != nil {
			return err
		}
	} else {
		p, err := proof.Parse(a.Proof)
		if err != nil {
			return notValid("its proof is not a countersign proof: %v", err)
		}
		if p.ApprovalID != a.ApprovalID || p.PayloadSHA256 != a.PayloadSHA256 {
			return notValid("its proof is for approval %s and payload %s, not this one", p.ApprovalID, p.PayloadSHA256)
		}
		fmt.Fprintf(out, "Approval %s (%s, %s): its payload hashes to payload_sha256 %s.\n\nIts decision proof:\n", a.ApprovalID, a.Kind, a.Status, a.PayloadSHA256)
		if err := verifyProof(a.Proof, file+" (its proof)", opts, out); err != nil {
			return err
		}
		decision = p.Decision
	}
	if a.Kind != "run" {
		return nil
	}
	pin, err := runner.ReadPin(a.Payload)
	if err != nil || pin.RunnerPublicKey == "" {
		return notValid("its payload is not a pinned run")
	}
	if decision != "approve" {
		for _, e := range a.Timeline {
			if e.By == "runner" {
				return notValid("a runner reported on a run whose proof signs %q, not approve", decision)
			}
		}
	}
	fmt.Fprintf(out, "\nRunner reports (each checked against runner_public_key %s of runner %s, in the signed payload):\n", pin.RunnerPublicKey, pin.RunnerID)
	var bad []string
	reports := 0
	for _, e := range a.Timeline {
		if e.By != "runner" {
			continue
		}
		reports++
		verdict := "signed"
		switch {
		case e.Runner == nil:
			verdict = "NOT SIGNED"
		case e.Runner.RunnerID != pin.RunnerID:
			verdict = "NOT VALID: signed as runner " + e.Runner.RunnerID
		default:
			if err := proof.VerifyRunnerReport(pin.RunnerPublicKey, a.ApprovalID, a.PayloadSHA256, e.Step, e.Note, *e.Runner); err != nil {
				verdict = "NOT VALID: " + err.Error()
			}
		}
		if verdict != "signed" {
			bad = append(bad, e.Step+" at "+e.At.Format(time.RFC3339))
		}
		signedAt := ""
		if e.Runner != nil {
			signedAt = time.Unix(e.Runner.SignedAt, 0).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(out, "  %-8s %-20s %s  %q\n", e.Step, signedAt, verdict, e.Note)
	}
	if reports == 0 {
		fmt.Fprintln(out, "  (none yet)")
	}
	if len(bad) > 0 {
		return errors.New("the approval in " + file + " is NOT valid: runner reports that do not verify: " + fmt.Sprint(bad))
	}
	fmt.Fprintf(out, "\nVALID: the decision and all %d runner report(s) verify.\n", reports)
	return nil
}
