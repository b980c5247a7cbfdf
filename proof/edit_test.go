package proof_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/countersign/countersign/proof"
)

const (
	toolCall       = `{"tool_call":{"arguments":{"content":"hello","path":"/srv/notes.txt"},"server":"filesystem","tool":"write_file"}}`
	toolCallEdited = `{"tool_call":{"arguments":{"content":"hello, edited","path":"/srv/notes.txt"},"server":"filesystem","tool":"write_file"}}`
)

// editedProof is a proof of an approve_edited decision on toolCall, signed
// with a software passkey the way the server signs one, carrying both
// payloads.
func editedProof(t *testing.T, edited string) *proof.Proof {
	t.Helper()
	rp, u, auth, key := withPasskey(t)
	sum, editedSum := sha256.Sum256([]byte(toolCall)), sha256.Sum256([]byte(edited))
	payloadSHA, decision := hex.EncodeToString(sum[:]), proof.EditedDecision(hex.EncodeToString(editedSum[:]))
	nonce := make([]byte, proof.NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	challenge := proof.Challenge(proof.Domain, "appr_edit", payloadSHA, decision, nonce)
	options, session, err := rp.BeginDecision(u, challenge)
	if err != nil {
		t.Fatal(err)
	}
	assertion, err := auth.Assert(origin, options)
	if err != nil {
		t.Fatal(err)
	}
	a, err := rp.FinishDecision(u, session, assertion, challenge)
	if err != nil {
		t.Fatal(err)
	}
	publicKey, _ := base64.RawURLEncoding.DecodeString(key.PublicKey)
	p := rp.Proof(a, publicKey, "appr_edit", payloadSHA, decision, nonce, unsigned)
	p.Payload, p.EditedPayload = proof.B64(toolCall), proof.B64(edited)
	return p
}

// One signature binds both hashes: the ask's payload (payload_sha256) and
// the payload as the person edited it (the decision). A verifier holding
// the proof alone sees which members changed; a proof whose edited payload
// is not the one signed fails.
func TestAnEditedApproveBindsBothPayloads(t *testing.T) {
	p := editedProof(t, toolCallEdited)
	res, err := proof.Verify(clone(t, p), proof.Expect{Origin: origin})
	if err != nil {
		t.Fatalf("the edited approve does not verify: %v", err)
	}
	editedSum := sha256.Sum256([]byte(toolCallEdited))
	if res.EditedSHA256 != hex.EncodeToString(editedSum[:]) || !res.PayloadTold {
		t.Errorf("edited hash %q, payload told %v", res.EditedSHA256, res.PayloadTold)
	}
	if len(res.Edits) != 1 || res.Edits[0].Path != "/tool_call/arguments/content" ||
		string(res.Edits[0].Before) != `"hello"` || string(res.Edits[0].After) != `"hello, edited"` {
		t.Errorf("edits = %+v, want the one content change", res.Edits)
	}

	for _, tc := range []struct {
		name, check string
		change      func(*proof.Proof)
	}{
		{"another edited payload than the signed one", "edited_payload", func(p *proof.Proof) {
			p.EditedPayload = proof.B64(`{"tool_call":{"arguments":{"content":"rm -rf /","path":"/srv/notes.txt"},"server":"filesystem","tool":"write_file"}}`)
		}},
		{"an edited payload not in canonical form", "edited_payload", func(p *proof.Proof) {
			p.EditedPayload = proof.B64(` ` + toolCallEdited)
		}},
		{"an edited payload beside a plain approve", "edited_payload", func(p *proof.Proof) { p.Decision = "approve" }},
		{"another ask's payload", "payload", func(p *proof.Proof) { p.Payload = proof.B64(toolCallEdited) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := clone(t, p)
			tc.change(q)
			_, err := proof.Verify(q, proof.Expect{Origin: origin})
			var f *proof.Failure
			if !errors.As(err, &f) || f.Check != tc.check {
				t.Fatalf("Verify = %v, want a failure of check %s", err, tc.check)
			}
		})
	}
	t.Run("the edited payload unchanged", func(t *testing.T) {
		_, err := proof.Verify(editedProof(t, toolCall), proof.Expect{Origin: origin})
		var f *proof.Failure
		if !errors.As(err, &f) || f.Check != "edited_payload" {
			t.Fatalf("Verify = %v, want an edited_payload failure: nothing was edited", err)
		}
	})
	t.Run("parsed strictly", func(t *testing.T) {
		raw, _ := json.Marshal(p)
		back, err := proof.Parse(raw)
		if err != nil || string(back.EditedPayload) != toolCallEdited {
			t.Fatalf("Parse: %v, edited payload %q", err, back.EditedPayload)
		}
	})
}

func TestEditsNameEachChangedMemberByItsPointer(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		want       []string
	}{
		{"equal", `{"a":1}`, `{"a":1}`, nil},
		{"a nested string", `{"run":{"argv":["x.sh","eu","1"]}}`, `{"run":{"argv":["x.sh","us","1"]}}`, []string{"/run/argv/1"}},
		{"two members, in order", `{"b":true,"a":"x"}`, `{"b":false,"a":"y"}`, []string{"/a", "/b"}},
		{"a member added and one removed", `{"a":1,"b":2}`, `{"a":1,"c":2}`, []string{"/b", "/c"}},
		{"an array of another length", `{"a":[1,2]}`, `{"a":[1,2,3]}`, []string{"/a"}},
		{"a type change", `{"a":{"b":1}}`, `{"a":"b"}`, []string{"/a"}},
		{"a name with / and ~", `{"x/y~":1}`, `{"x/y~":2}`, []string{"/x~1y~0"}},
		{"numbers compared by value", `{"a":1.0}`, `{"a":1}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edits, err := proof.Edits([]byte(tc.a), []byte(tc.b))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range edits {
				got = append(got, e.Path)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("edits at %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("edits at %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// docs/proof.md shows the approve_edited vector as the testdata has it.
func TestTheProofDocumentShowsTheEditedVector(t *testing.T) {
	raw, err := os.ReadFile("testdata/challenge_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs vectors
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/proof.md")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range vs.Vectors {
		if v.EditedPayload == "" {
			continue
		}
		found = true
		for _, want := range []string{v.Decision, v.ChallengeHex, v.NonceHex, v.PayloadSHA256, v.EditedPayload} {
			if !strings.Contains(string(doc), want) {
				t.Errorf("docs/proof.md does not show the approve_edited vector's %q", want)
			}
		}
	}
	if !found {
		t.Fatal("no approve_edited vector in testdata/challenge_vectors.json")
	}
}
