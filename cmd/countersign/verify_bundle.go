package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/countersign/countersign/proof"
)

// verifyBundle checks the proof bundle of an ask an approval rule covers
// (countersign-bundle/v1): every signature valid over the payload, the
// decision and the frozen requirement; N distinct persons of the key export
// (or, with --allow-self-asserted, of the proofs' own unsigned claims) among
// the requirement's people. It returns the bundle's decision.
func verifyBundle(raw []byte, file string, opts verifyOptions, out io.Writer) (string, error) {
	b, err := proof.ParseBundle(raw)
	if err != nil {
		return "", fmt.Errorf("the bundle in %s is NOT valid: it is not a countersign bundle: %w", file, err)
	}
	var keys *proof.Keys
	if opts.keysFile != "" {
		raw, err := os.ReadFile(opts.keysFile)
		if err != nil {
			return "", fmt.Errorf("cannot read the key export: %w", err)
		}
		if keys, err = proof.ParseKeys(raw); err != nil {
			return "", fmt.Errorf("%s is not a key export: %w", opts.keysFile, err)
		}
	}
	res, err := proof.VerifyBundle(b, proof.Expect{RPID: opts.rpID, Origin: opts.origin, Keys: keys})
	if err != nil {
		return "", fmt.Errorf("the bundle in %s is NOT valid: %w", file, err)
	}
	var refusals []string
	for i, r := range res.Proofs {
		if !r.PayloadTold && !opts.allowNoPayload {
			refusals = append(refusals, fmt.Sprintf("proof %d carries no payload; pass --allow-missing-payload to accept it on the hash alone", i+1))
		}
	}
	if keys == nil && !opts.allowSelf {
		refusals = append(refusals, "the signers are only self-asserted: without --keys KEYS.json (from countersign keys export) nothing shows "+
			"that the keys belong to distinct registered people of the account; pass --keys, or --allow-self-asserted to accept that")
	}
	if len(refusals) == 0 {
		fmt.Fprintf(out, "VALID: the %d signature(s) in %s meet the requirement of rule %s and verify over this decision.\n\n", len(res.Proofs), file, res.Requirement.RuleID)
	} else {
		fmt.Fprintf(out, "NOT ACCEPTED: the signatures in %s verify, but %s.\n\n", file, strings.Join(refusals, "; and "))
	}
	req, _ := json.Marshal(res.Requirement)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  decision\t%s\n", res.Decision)
	fmt.Fprintf(tw, "  payload_sha256\t%s\n", res.PayloadSHA256)
	fmt.Fprintf(tw, "  approval\t%s\n", res.ApprovalID)
	fmt.Fprintf(tw, "  requirement\t%d of %s (rule %s)\n", res.Requirement.Count, res.Requirement.Pool, res.Requirement.RuleID)
	fmt.Fprintf(tw, "  requirement (signed)\t%s\n", req)
	for i, r := range res.Proofs {
		who := res.Signers[i]
		if keys == nil {
			who += " (self-asserted)"
		}
		fmt.Fprintf(tw, "  signature %d\t%s: %s, key %s\n", i+1, who, r.Decision, r.CredentialID)
	}
	if err := tw.Flush(); err != nil {
		return "", err
	}
	if len(refusals) > 0 {
		return "", errors.New("the bundle in " + file + " is NOT accepted: " + strings.Join(refusals, "; and "))
	}
	return res.Decision, nil
}
