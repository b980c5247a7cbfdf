package ask_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/ask"
)

// payloadSeeds are valid and nearly valid payloads of every kind.
var payloadSeeds = []struct{ kind, payload string }{
	{"pull_request", `{"pull_request":{"repo":"acme/web","number":900,"head":"abcdef1234567","title":"Fix login redirect"}}`},
	{"pull_request", `{"pull_request":{"repo":" acme/web ","number":1e3,"head":"abcdef1","title":"x","Repo":"y"}}`},
	{"roll", `{"roll":{"deployments":["web"],"main_commit":"abcdef1","running_commit":"1234567","prs":[{"number":1,"title":"a"}],"behind":2}}`},
	{"review", `{"review":{"url":"https://example.com/r/1"}}`},
	{"document", `{"document":{"document_id":"doc_1","space_id":"","version":0}}`},
	{"decision", `{"decision":{"options":["Ship today","Wait for Monday"]}}`},
	{"run", `{"run":{"cmd":"make deploy","script_sha256":"` + strings.Repeat("a", 64) + `","runner_id":"r1","argv":["deploy.sh"],"effect":"remote","runner_public_key":"k","expires_at":1893456000,"asked_of":"ada"}}`},
	{"decision", `{"decision":{"options":[]}}`},
	{"review", `{"review":{"url":"http://example.com","url":"https://example.com"}}`},
	{"pull_request", `{"pull_request":null}`},
	{"auto_approve", `{}`},
	{"", `[]`},
	{"review", "{\"review\":{\"url\":\"https://e.com/\\ud800\"}}"},
}

// FuzzParsePayload: validation never panics, and what it accepts is frozen
// consistently: the canonical bytes hash to the hash, and validating them
// again accepts them with the same hash.
func FuzzParsePayload(f *testing.F) {
	for _, s := range payloadSeeds {
		f.Add(s.kind, []byte(s.payload))
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, kind string, raw []byte) {
		p, err := ask.ParsePayload(kind, raw, now)
		if err != nil {
			if ask.CodeOf(err) == "" {
				t.Fatalf("a refusal that is not a typed error: %v", err)
			}
			return
		}
		canonical, sum, err := ask.CanonicalHash(raw)
		if err != nil || !bytes.Equal(canonical, p.Canonical) || sum != p.SHA256 {
			t.Fatalf("accepted %q, but its canonical form is %q/%s (%v), not %q/%s", raw, canonical, sum, err, p.Canonical, p.SHA256)
		}
		again, err := ask.ParsePayload(kind, p.Canonical, now)
		if err != nil || again.SHA256 != p.SHA256 || !bytes.Equal(again.Canonical, p.Canonical) {
			t.Fatalf("the canonical form %q of an accepted payload is refused or hashes otherwise: %v", p.Canonical, err)
		}
	})
}

// FuzzCanonicalHash: hashing never panics; a value it accepts keeps its hash
// when its members are written in reverse order with white space, and its
// canonical form is a fixed point.
func FuzzCanonicalHash(f *testing.F) {
	for _, s := range payloadSeeds {
		f.Add([]byte(s.payload))
	}
	for _, s := range []string{`1`, `-0`, `1e400`, `"\u00e9"`, `"e\u0301"`, `{"b":1,"a":[true,null,{"d":1.50,"c":"x"}]}`, `{"\u20ac":1,"\ud83d\ude00":2,"a":3}`, `[1,]`, `{"a":1}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		canonical, sum, err := ask.CanonicalHash(raw)
		if err != nil {
			return
		}
		again, sum2, err := ask.CanonicalHash(canonical)
		if err != nil || !bytes.Equal(again, canonical) || sum2 != sum {
			t.Fatalf("the canonical form %q is not a fixed point: %q, %v", canonical, again, err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("JCS accepted %q, encoding/json refuses it: %v", raw, err)
		}
		var shuffled bytes.Buffer
		writeReversed(&shuffled, v)
		_, sum3, err := ask.CanonicalHash(shuffled.Bytes())
		if err != nil || sum3 != sum {
			t.Fatalf("%q reordered as %q hashes to %s (%v), want %s", raw, shuffled.Bytes(), sum3, err, sum)
		}
	})
}

// writeReversed writes v as JSON with every object's members in reverse
// order and white space around every token.
func writeReversed(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(names)))
		b.WriteString("{ ")
		for i, k := range names {
			if i > 0 {
				b.WriteString(" ,\n ")
			}
			name, _ := json.Marshal(k)
			b.Write(name)
			b.WriteString(" :\t")
			writeReversed(b, v[k])
		}
		b.WriteString(" }")
	case []any:
		b.WriteString("[ ")
		for i, e := range v {
			if i > 0 {
				b.WriteString(" , ")
			}
			writeReversed(b, e)
		}
		b.WriteString(" ]")
	case json.Number:
		b.WriteString(v.String())
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("marshal %v: %v", v, err))
		}
		b.Write(raw)
	}
}
