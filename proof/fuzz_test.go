package proof_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/countersign/countersign/proof"
)

// FuzzParseAndVerify: reading and verifying any bytes never panics, and a
// proof the fuzzer changed verifies only if it still holds exactly what was
// signed.
func FuzzParseAndVerify(f *testing.F) {
	raw, err := os.ReadFile(vectorsFile)
	if err != nil {
		f.Fatal(err)
	}
	var v vectorFile
	if err := json.Unmarshal(raw, &v); err != nil {
		f.Fatal(err)
	}
	for _, c := range v.Cases {
		b, err := json.Marshal(c.Proof)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format":"countersign-proof/v1","unsigned":[]}`))
	f.Add([]byte(`{"Format":"x","format":"y"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := proof.Parse(raw)
		if err != nil {
			return
		}
		res, err := proof.Verify(p, proof.Expect{RPID: v.RPID, Keys: v.Keys})
		if err != nil {
			return
		}
		// It verified: then it signs the vectors' challenge inputs with the vectors' key.
		if res.ApprovalID != v.Proof.ApprovalID || res.PayloadSHA256 == "" || !res.KeyRegistered {
			t.Fatalf("an unexpected proof verifies: %+v", res)
		}
	})
}
