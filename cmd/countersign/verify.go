package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/proof"
)

const verifyUsage = "usage: countersign verify PROOF.json [--keys KEYS.json] [--rp-id ID]"

// verifyCommand checks a decision proof offline: it needs no configuration,
// no database and no network.
func verifyCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	keysFile := fs.String("keys", "", "a key export (countersign keys export)")
	rpID := fs.String("rp-id", "", "the RP ID the proof must be for (the host of the service's URL)")
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
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

	var p proof.Proof
	if err := readJSONFile(file, &p); err != nil {
		return fmt.Errorf("the proof is NOT valid: %w", err)
	}
	var keys *proof.Keys
	if *keysFile != "" {
		keys = &proof.Keys{}
		if err := readJSONFile(*keysFile, keys); err != nil {
			return err
		}
	}
	res, err := proof.Verify(&p, keys, *rpID)
	if err != nil {
		return fmt.Errorf("the proof in %s is NOT valid: %w", file, err)
	}

	fmt.Fprintf(out, "VALID: the signature in %s verifies over this decision.\n\n", file)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  decision\t%s\n", res.Decision)
	fmt.Fprintf(tw, "  payload_sha256\t%s\n", res.PayloadSHA256)
	fmt.Fprintf(tw, "  approval\t%s\n", res.ApprovalID)
	fmt.Fprintf(tw, "  key (credential id)\t%s\n", res.CredentialID)
	fmt.Fprintf(tw, "  rp id\t%s\n", p.RPID)
	fmt.Fprintf(tw, "  origin\t%s\n", res.Origin)
	fmt.Fprintf(tw, "  sign count\t%d\n", res.SignCount)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if keys != nil {
		var k proof.DeviceKey
		for _, dk := range keys.Keys {
			if bytes.Equal(dk.CredentialID, p.CredentialID) {
				k = dk
				break
			}
		}
		removed := ""
		if k.Removed {
			removed = "; it has been removed since"
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

	fmt.Fprintln(out, "\nUnsigned claims (NOT covered by the signature: what the server that kept the proof says):")
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  person\t%s\n", p.Unsigned.Person)
	fmt.Fprintf(tw, "  account\t%s\n", p.Unsigned.AccountID)
	if !p.Unsigned.DecidedAt.IsZero() {
		fmt.Fprintf(tw, "  decided at\t%s\n", p.Unsigned.DecidedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// readJSONFile reads one JSON document from file into v.
func readJSONFile(file string, v any) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s is not the JSON expected: %w", file, err)
	}
	return nil
}
