package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/apptest"
)

func TestVerifyRefusesOneSignatureOfATwoPersonAskAsItsDecision(t *testing.T) {
	s := newTwoPersonScene(t)
	id := s.document(t)
	if r := s.ada.Decide(id, "approve", ""); r.Status != http.StatusOK {
		t.Fatalf("ada approves: %s", r)
	}
	got := s.agent.OK("approvals_get", map[string]any{"approval_id": id})
	if got["status"] != "pending" {
		t.Fatalf("after one of two signatures the ask is %v, want pending", got["status"])
	}
	sigs, _ := got["signatures"].([]any)
	if len(sigs) != 1 {
		t.Fatalf("signatures %v, want ada's one", got["signatures"])
	}
	one, _ := json.Marshal(sigs[0].(map[string]any)["proof"])
	dir := t.TempDir()
	file := writeFile(t, dir, "one.json", one)
	keys := writeFile(t, dir, "keys.json", s.env.KeysExport(s.env.Account.ID))

	r := cli(t, nil, "verify", file, "--keys", keys, "--origin", s.env.URL)
	if r.code != 1 || strings.Contains(r.stdout, "VALID:") || !strings.Contains(r.stdout, "NOT ACCEPTED") ||
		!strings.Contains(r.stderr, "the requirement is not met: rule two-for-documents asks for 2 of admins, and this is 1 of 2 signatures") {
		t.Fatalf("verify of one signature of a 2-of-2 ask: %s\nwant exit 1, NOT ACCEPTED, the requirement not met (1 of 2)", r)
	}
	for _, flag := range []string{"--allow-self-asserted", "--allow-missing-payload"} {
		if r := cli(t, nil, "verify", file, "--keys", keys, "--origin", s.env.URL, flag); r.code != 1 || !strings.Contains(r.stderr, "requirement is not met") {
			t.Fatalf("verify %s of one signature: %s; no flag accepts it", flag, r)
		}
	}

	// A veto is decided by one person: bob's deny alone is the decision.
	if r := s.bob.Decide(id, "deny", ""); r.Status != http.StatusOK {
		t.Fatalf("bob denies: %s", r)
	}
	got = s.agent.OK("approvals_get", map[string]any{"approval_id": id})
	sigs, _ = got["signatures"].([]any)
	deny, _ := json.Marshal(sigs[1].(map[string]any)["proof"])
	if ok := cli(t, nil, "verify", writeFile(t, dir, "deny.json", deny), "--keys", keys, "--origin", s.env.URL); ok.code != 0 ||
		!strings.Contains(ok.stdout, "VALID:") || !strings.Contains(ok.stdout, "deny") {
		t.Fatalf("verify of a deny on a 2-of-2 ask: %s; want VALID, a veto decides alone", ok)
	}
}

func TestVerifyRefusesAnAnswerThatNamesAMemberTwice(t *testing.T) {
	s := newTwoPersonScene(t)
	id := s.document(t)
	for _, b := range []*apptest.Browser{s.ada, s.bob} {
		if r := b.Decide(id, "approve", ""); r.Status != http.StatusOK {
			t.Fatalf("approve: %s", r)
		}
	}
	answer := []byte(s.agent.Call("approvals_get", map[string]any{"approval_id": id}).Text)
	dir := t.TempDir()
	keys := writeFile(t, dir, "keys.json", s.env.KeysExport(s.env.Account.ID))
	if ok := cli(t, nil, "verify", writeFile(t, dir, "answer.json", answer), "--keys", keys, "--origin", s.env.URL); ok.code != 0 {
		t.Fatalf("verify of the answer as it came: %s", ok)
	}
	// A member placed first that a reader keeping the first of two would
	// read, while encoding/json keeps the genuine last one.
	for _, dup := range []struct{ name, member string }{
		{"payload", `"payload":{"document":{"document_id":"doc_666","space_id":"space_1","version":3}},`},
		{"decision", `"decision":"deny",`},
		{"status", `"status":"denied",`},
	} {
		forged := append([]byte("{"+dup.member), bytes.TrimPrefix(bytes.TrimSpace(answer), []byte("{"))...)
		r := cli(t, nil, "verify", writeFile(t, dir, dup.name+".json", forged), "--keys", keys, "--origin", s.env.URL)
		if r.code != 1 || !strings.Contains(r.stderr, "NOT valid") || !strings.Contains(r.stderr, `member "`+dup.name+`" is named twice`) {
			t.Errorf("verify of an answer with a second %s first: %s; want exit 1 naming the member", dup.name, r)
		}
	}
}
