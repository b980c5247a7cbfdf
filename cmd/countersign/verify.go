package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/proof"
)

const verifyUsage = "usage: countersign verify PROOF.json|BUNDLE.json|APPROVAL.json [--keys KEYS.json] [--rp-id ID] [--origin ORIGIN] [--allow-self-asserted] [--allow-missing-payload]"

// verifyCommand checks a decision proof offline: it needs no configuration,
// no database and no network. It exits 0 only when the proof is valid, its
// key is a registered device key (or --allow-self-asserted says a
// self-asserted key will do) and it carries the payload it signs (or
// --allow-missing-payload says an older proof without it will do).
// docs/proof.md says what each check is.
func verifyCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keysFile := fs.String("keys", "", "a key export (countersign keys export)")
	rpID := fs.String("rp-id", "", "the RP ID the proof must be for (the host of the service's URL)")
	origin := fs.String("origin", "", "the origin the passkey must have signed at (default https://<rp id>; http only for localhost)")
	allowSelf := fs.Bool("allow-self-asserted", false, "accept a proof whose key is not checked against a key export")
	allowNoPayload := fs.Bool("allow-missing-payload", false, "accept a proof made before proofs carried their payload")
	var files []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(out, verifyUsage)
			fs.SetOutput(out)
			fs.PrintDefaults()
			return nil
		} else if err != nil {
			return usageError{fmt.Sprintf("verify: %v\n%s", err, verifyUsage)}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		files, args = append(files, args[0]), args[1:]
	}
	if len(files) != 1 {
		return usageError{verifyUsage}
	}
	file := files[0]

	raw, err := os.ReadFile(file)
	if err != nil {
		// Not a verdict on the proof: there was none to read.
		return fmt.Errorf("cannot read the proof file: %w", err)
	}
	opts := verifyOptions{keysFile: *keysFile, rpID: *rpID, origin: *origin, allowSelf: *allowSelf, allowNoPayload: *allowNoPayload}
	if answer, ok := readApprovalAnswer(raw); ok {
		// A member named twice reads as its last here and may read as its
		// first elsewhere: refused, as inside a proof.
		if err := proof.NoDuplicateMembers(raw); err != nil {
			return fmt.Errorf("the approval in %s is NOT valid: %w", file, err)
		}
		return verifyAnswer(answer, file, opts, out)
	}
	if proof.IsBundle(raw) {
		_, err := verifyBundle(raw, file, opts, out)
		return err
	}
	return verifyProof(raw, file, opts, out)
}

// verifyOptions are verify's flags.
type verifyOptions struct {
	keysFile, rpID, origin    string
	allowSelf, allowNoPayload bool
}

// verifyProof checks one decision proof and prints what it shows.
func verifyProof(raw []byte, file string, opts verifyOptions, out io.Writer) error {
	keysFile, rpID, origin, allowSelf, allowNoPayload := &opts.keysFile, &opts.rpID, &opts.origin, &opts.allowSelf, &opts.allowNoPayload
	p, err := proof.Parse(raw)
	if err != nil {
		return fmt.Errorf("the proof in %s is NOT valid: it is not a countersign proof: %w", file, err)
	}
	var keys *proof.Keys
	if *keysFile != "" {
		raw, err := os.ReadFile(*keysFile)
		if err != nil {
			return fmt.Errorf("cannot read the key export: %w", err)
		}
		if keys, err = proof.ParseKeys(raw); err != nil {
			return fmt.Errorf("%s is not a key export: %w", *keysFile, err)
		}
	}
	want := proof.Expect{RPID: *rpID, Origin: *origin, Keys: keys}
	res, err := proof.Verify(p, want)
	if err != nil {
		return fmt.Errorf("the proof in %s is NOT valid: %w%s", file, err, originHint(p, want, err))
	}

	// What keeps a valid signature from being accepted.
	var refusals []string
	if !res.PayloadTold && !*allowNoPayload {
		refusals = append(refusals, "the proof carries no payload (it was made before proofs carried one), so what payload_sha256 "+
			"stands for could not be checked; pass --allow-missing-payload to accept it on the hash alone")
	}
	// One signature of an ask a rule covers is one person's part of its
	// decision, no decision by itself: only a veto decides alone. No flag
	// accepts it; the ask's bundle is its proof (docs/proof.md §9).
	if req := p.Requirement; req != nil && req.Count > 1 && !proof.Vetoes(p.Decision) {
		refusals = append(refusals, fmt.Sprintf("the requirement is not met: rule %s asks for %d of %s, and this is 1 of %d signatures; "+
			"it is one person's part of the decision, not the decision: verify the ask's bundle (GET /approvals/%s/proof.json, "+
			"or the proof approvals_get answers once the ask is decided)", req.RuleID, req.Count, req.Pool, req.Count, p.ApprovalID))
	}
	if keys == nil && !*allowSelf {
		refusals = append(refusals, "the key is only self-asserted: the proof carries its own public key and anyone can make a key; "+
			"pass --keys KEYS.json (from countersign keys export) to check that it is a registered device key of the account, "+
			"or --allow-self-asserted to accept that")
	}
	if len(refusals) == 0 {
		fmt.Fprintf(out, "VALID: the signature in %s verifies over this decision.\n\n", file)
	} else {
		fmt.Fprintf(out, "NOT ACCEPTED: the signature in %s verifies over this decision, but %s.\n\n", file, strings.Join(refusals, "; and "))
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  decision\t%s\n", res.Decision)
	fmt.Fprintf(tw, "  payload_sha256\t%s\n", res.PayloadSHA256)
	fmt.Fprintf(tw, "  approval\t%s\n", res.ApprovalID)
	fmt.Fprintf(tw, "  key (credential id)\t%s\n", res.CredentialID)
	fmt.Fprintf(tw, "  rp id\t%s\n", p.RPID)
	fmt.Fprintf(tw, "  origin\t%s\n", res.Origin)
	fmt.Fprintf(tw, "  sign count\t%d\n", res.SignCount)
	if req := p.Requirement; req != nil {
		fmt.Fprintf(tw, "  requirement\t%d of %s (rule %s): this proof is 1 signature of %d\n", req.Count, req.Pool, req.RuleID, req.Count)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if res.PayloadTold {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, p.Payload, "  ", "  "); err != nil {
			return fmt.Errorf("indent the payload: %w", err)
		}
		fmt.Fprintf(out, "Payload (its SHA-256 was recomputed and is payload_sha256, so the signature covers it):\n  %s\n\n", pretty.String())
	} else {
		fmt.Fprintln(out, "Payload: ABSENT. This proof does not carry the payload, so only its hash is signed; the payload itself could not be checked.")
		fmt.Fprintln(out)
	}
	if keys != nil {
		var k proof.DeviceKey
		for _, dk := range keys.Keys {
			if bytes.Equal(dk.CredentialID, p.CredentialID) {
				k = dk
				break
			}
		}
		removed := ""
		switch {
		case k.RemovedAt != nil:
			removed = "; removed since, at " + k.RemovedAt.Format(time.RFC3339)
		case k.Removed:
			removed = "; it has been removed since, at a time the export does not say"
		}
		fmt.Fprintf(out, "Key: a registered device key of account %s: person %s, passkey %q, registered %s%s (checked against %s).\n",
			keys.AccountID, res.KeyPerson, k.Name, k.CreatedAt.Format(time.RFC3339), removed, *keysFile)
	} else {
		fmt.Fprintln(out, "Key: self-asserted only. The proof carries its own public key and anyone can make a key, so this shows")
		fmt.Fprintln(out, "only that whoever holds that key signed this decision. Pass --keys KEYS.json (from countersign keys export)")
		fmt.Fprintln(out, "to check that it is a registered device key of the account.")
	}
	if strings.HasPrefix(p.Decision, "question:") && p.Unsigned.Question != "" {
		fmt.Fprintf(out, "\nQuestion text (its SHA-256 is in the signed decision): %q\n", p.Unsigned.Question)
	}
	if strings.HasPrefix(p.Decision, "reply:") && p.Unsigned.Reply != "" {
		fmt.Fprintf(out, "\nDenied, with this reply in place of the tool's result (its SHA-256 is in the signed decision): %q\n", p.Unsigned.Reply)
	}
	if strings.HasPrefix(p.Decision, "approve_for:") && p.Unsigned.ApproveFor != "" {
		fmt.Fprintf(out, "\nApproved, and the same for a while: the asks of this agent, kind and target, for these minutes (its SHA-256 is in the signed decision):\n  %s\n", p.Unsigned.ApproveFor)
	}
	if res.EditedSHA256 != "" {
		fmt.Fprintln(out, "\nApproved with changes: the person edited the payload and signed both hashes.")
		fmt.Fprintf(out, "  asked (payload_sha256)  %s\n", res.PayloadSHA256)
		fmt.Fprintf(out, "  approved as edited      %s\n", res.EditedSHA256)
		switch {
		case len(res.Edits) > 0:
			fmt.Fprintln(out, "  Edited members (the edited payload was recomputed against its signed hash):")
			for _, e := range res.Edits {
				fmt.Fprintf(out, "    %s: %s -> %s\n", e.Path, editSide(e.Before), editSide(e.After))
			}
		default:
			fmt.Fprintln(out, "  The proof does not carry both payloads, so what was edited could not be shown; only the hashes are signed.")
		}
	}

	fmt.Fprintln(out, "\nUnsigned claims (NOT covered by the signature: what the server that kept the proof says):")
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  person\t%s\n", p.Unsigned.Person)
	fmt.Fprintf(tw, "  account\t%s\n", p.Unsigned.AccountID)
	if !p.Unsigned.DecidedAt.IsZero() {
		fmt.Fprintf(tw, "  decided at\t%s\n", p.Unsigned.DecidedAt.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(refusals) > 0 {
		return errors.New("the proof in " + file + " is NOT accepted: " + strings.Join(refusals, "; and "))
	}
	return nil
}

// editSide is one side of an edited member: its JSON, or "(absent)".
func editSide(v json.RawMessage) string {
	if v == nil {
		return "(absent)"
	}
	return string(v)
}

// originHint is what a refusal adds when the proof failed on its origin
// alone: checked at the origin it was signed at, it passes every other
// check, so the verifier was most likely not told the service's origin (a
// local service on http://localhost:PORT, or a subdomain of the RP ID). An
// origin that is not of the RP ID (a phishing page's) is never suggested.
func originHint(p *proof.Proof, want proof.Expect, err error) string {
	var f *proof.Failure
	if !errors.As(err, &f) || f.Check != "origin" {
		return ""
	}
	signed := p.SignedOrigin()
	if signed == "" || signed == want.Origin {
		return ""
	}
	want.Origin = signed
	if _, err := proof.Verify(p, want); err != nil {
		return ""
	}
	return fmt.Sprintf("; every other check passes at the origin it was signed at: if the service is at %s, run again with --origin %s", signed, signed)
}
