package proof_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/proof"
)

// The runner report vectors were computed in Python (testdata/runner_report_vectors.py),
// not with this code: the Go layout, signature and check must agree with them.
func TestRunnerReportVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "runner_report_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Domain          string `json:"domain"`
		SeedHex         string `json:"seed_hex"`
		RunnerPublicKey string `json:"runner_public_key"`
		Vectors         []struct {
			Name          string `json:"name"`
			ApprovalID    string `json:"approval_id"`
			PayloadSHA256 string `json:"payload_sha256"`
			Step          string `json:"step"`
			Note          string `json:"note"`
			NoteSHA256    string `json:"note_sha256"`
			SignedAt      int64  `json:"signed_at"`
			MessageHex    string `json:"message_hex"`
			Signature     string `json:"signature"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if file.Domain != proof.RunnerDomain || len(file.Vectors) == 0 {
		t.Fatalf("vectors of domain %q (%d), want %q", file.Domain, len(file.Vectors), proof.RunnerDomain)
	}
	seed, err := hex.DecodeString(file.SeedHex)
	if err != nil {
		t.Fatal(err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	if got := base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey)); got != file.RunnerPublicKey {
		t.Fatalf("public key %s, vectors say %s", got, file.RunnerPublicKey)
	}
	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			if got := proof.NoteSHA256(v.Note); got != v.NoteSHA256 {
				t.Errorf("note hash %s, want %s", got, v.NoteSHA256)
			}
			if got := hex.EncodeToString(proof.RunnerMessage(v.ApprovalID, v.PayloadSHA256, v.Step, v.Note, v.SignedAt)); got != v.MessageHex {
				t.Errorf("message\n got %s\nwant %s", got, v.MessageHex)
			}
			signed := proof.SignRunnerReport(key, "rnr_x", v.ApprovalID, v.PayloadSHA256, v.Step, v.Note, v.SignedAt)
			if signed.Signature != v.Signature || signed.SignedAt != v.SignedAt {
				t.Errorf("signature %s, want %s", signed.Signature, v.Signature)
			}
			rep := proof.RunnerReport{RunnerID: "rnr_x", SignedAt: v.SignedAt, Signature: v.Signature}
			if err := proof.VerifyRunnerReport(file.RunnerPublicKey, v.ApprovalID, v.PayloadSHA256, v.Step, v.Note, rep); err != nil {
				t.Errorf("the vector does not verify: %v", err)
			}
			for field, change := range map[string]func(*proof.RunnerReport) (string, string, string, string){
				"approval_id": func(*proof.RunnerReport) (string, string, string, string) {
					return v.ApprovalID + "x", v.PayloadSHA256, v.Step, v.Note
				},
				"payload_sha256": func(*proof.RunnerReport) (string, string, string, string) {
					return v.ApprovalID, v.PayloadSHA256[1:] + "0", v.Step, v.Note
				},
				"step": func(*proof.RunnerReport) (string, string, string, string) {
					return v.ApprovalID, v.PayloadSHA256, "done!", v.Note
				},
				"note": func(*proof.RunnerReport) (string, string, string, string) {
					return v.ApprovalID, v.PayloadSHA256, v.Step, v.Note + " "
				},
				"signed_at": func(r *proof.RunnerReport) (string, string, string, string) {
					r.SignedAt++
					return v.ApprovalID, v.PayloadSHA256, v.Step, v.Note
				},
			} {
				r := rep
				id, sha, step, note := change(&r)
				if err := proof.VerifyRunnerReport(file.RunnerPublicKey, id, sha, step, note, r); err == nil {
					t.Errorf("a report with %s changed still verifies", field)
				}
			}
		})
	}
}
