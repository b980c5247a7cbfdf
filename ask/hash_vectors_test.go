package ask

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// The vectors in testdata/hash_vectors.json were computed once, outside Go:
// Python 3 (json, keys sorted by UTF-16 code units, ensure_ascii=False, no
// white space, numbers written by ECMAScript's Number-to-String rule from
// repr's shortest digits) and checked against Node's JSON.stringify with the
// canonicalize function of RFC 8785's appendix; the RFC's own sample
// (rfc8785_sample) was compared with the RFC text by hand. Each payload is
// stored verbatim, so its white space, key order and escapes are what
// CanonicalHash reads.
type hashVector struct {
	Name      string          `json:"name"`
	Payload   json.RawMessage `json:"payload"`
	Canonical string          `json:"canonical"`
	SHA256    string          `json:"sha256"`
}

func loadHashVectors(t *testing.T) map[string]hashVector {
	t.Helper()
	b, err := os.ReadFile("testdata/hash_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var list []hashVector
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]hashVector{}
	for _, v := range list {
		if _, dup := out[v.Name]; dup {
			t.Fatalf("vector %q twice", v.Name)
		}
		out[v.Name] = v
	}
	if len(out) < 15 {
		t.Fatalf("only %d vectors", len(out))
	}
	return out
}

func TestCanonicalHashVectors(t *testing.T) {
	for name, v := range loadHashVectors(t) {
		t.Run(name, func(t *testing.T) {
			canonical, sum, err := CanonicalHash(v.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if string(canonical) != v.Canonical {
				t.Fatalf("canonical\n got %s\nwant %s", canonical, v.Canonical)
			}
			if sum != v.SHA256 {
				t.Fatalf("sha256 %s, want %s", sum, v.SHA256)
			}
			h := sha256.Sum256([]byte(v.Canonical))
			if hex.EncodeToString(h[:]) != v.SHA256 {
				t.Fatalf("the vector's own sha256 does not match its canonical form")
			}
		})
	}
}

func TestCanonicalHashEqualAndDifferent(t *testing.T) {
	vs := loadHashVectors(t)
	same := [][2]string{
		{"key_order", "key_order_reversed_same_hash"},
	}
	for _, p := range same {
		if vs[p[0]].SHA256 != vs[p[1]].SHA256 {
			t.Errorf("%s and %s differ only in key order and must hash equal", p[0], p[1])
		}
		if bytes.Equal(vs[p[0]].Payload, vs[p[1]].Payload) {
			t.Errorf("%s and %s are the same text: the pair tests nothing", p[0], p[1])
		}
	}
	if vs["unicode_nfc_e_acute"].SHA256 == vs["unicode_nfd_e_acute"].SHA256 {
		t.Error("NFC and NFD text must hash differently: no Unicode normalisation")
	}
	if !bytes.ContainsAny(vs["white_space"].Payload, "\n\t\r") {
		t.Error("the white_space vector lost its white space")
	}
	if !bytes.Contains(vs["escaped_u_characters"].Payload, []byte(`\u00e9`)) {
		t.Error("the escaped_u_characters vector lost its escapes")
	}

	// Key order and white space change nothing; anything else does.
	variants := []string{
		`{"pull_request":{"repo":"acme/api","number":900,"head":"abcdef0","title":"t"}}`,
		`{"pull_request":{"title":"t","head":"abcdef0","number":900,"repo":"acme/api"}}`,
		" {\n\t\"pull_request\" : {\r\n \"number\":900, \"title\" :\"t\",\"repo\":\"acme/api\",\"head\":\"abcdef0\"}\n} ",
		`{"pull_request":{"repo":"acme\/api","number":900,"head":"abcdef0","title":"\u0074"}}`,
	}
	_, first, err := CanonicalHash(json.RawMessage(variants[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants[1:] {
		_, sum, err := CanonicalHash(json.RawMessage(v))
		if err != nil {
			t.Fatal(err)
		}
		if sum != first {
			t.Errorf("%s hashes %s, want %s", v, sum, first)
		}
	}
	_, other, _ := CanonicalHash(json.RawMessage(`{"pull_request":{"repo":"acme/api","number":901,"head":"abcdef0","title":"t"}}`))
	if other == first {
		t.Error("another number must hash differently")
	}
}

func TestCanonicalHashRefusals(t *testing.T) {
	for _, raw := range []string{
		``, `   `, `{"a":1,"a":2}`, `{"a":1} x`, `{"a":}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `[1e999]`, `{"a":NaN}`, `{'a':1}`,
	} {
		_, _, err := CanonicalHash(json.RawMessage(raw))
		if CodeOf(err) != InvalidArgument {
			t.Errorf("CanonicalHash(%q) = %v, want INVALID_ARGUMENT", raw, err)
		}
	}
	for _, raw := range []string{`0`, `"x"`, `null`, `[]`, `{}`, ` true `} {
		if _, _, err := CanonicalHash(json.RawMessage(raw)); err != nil {
			t.Errorf("CanonicalHash(%q) = %v, want success", raw, err)
		}
	}
}
