package ask

// Reading JSON the strict way, and the checks of values that payloads and
// contexts share (integers, commit shas, repositories).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// maxSafeInt is 2^53-1, the largest integer a double (and so JCS) holds exactly.
const maxSafeInt = 1<<53 - 1

// CanonicalHash returns the RFC 8785 (JCS) canonical bytes of any JSON value
// and the lower-case hex SHA-256 of them. It is the hash of a payload and of
// the observed payload an agent reports on "started". The value is taken as
// sent: no Unicode normalisation. A value that is not I-JSON (bad syntax,
// trailing data, duplicate names, invalid UTF-8, lone surrogates, numbers out
// of the double range) is an INVALID_ARGUMENT with no field: the caller knows
// which argument it hashed and may set Field.
func CanonicalHash(raw json.RawMessage) (canonical []byte, sha256hex string, err error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, "", Invalid("", "a JSON value is required")
	}
	canonical, err = jcs.Transform(raw)
	if err != nil {
		return nil, "", Invalid("", "not valid I-JSON for RFC 8785 canonical form: %v", err)
	}
	sum := sha256.Sum256(canonical)
	return canonical, hex.EncodeToString(sum[:]), nil
}

// readSent reads raw, the value sent as field ("payload" or "context"): its
// canonical bytes and their hash, then its generic tree. Every refusal names
// field.
func readSent(field string, raw json.RawMessage) (canonical []byte, sum string, tree any, err error) {
	canonical, sum, err = CanonicalHash(raw)
	if err != nil {
		var e *Refusal
		if errors.As(err, &e) {
			return nil, "", nil, Invalid(field, "%s", e.Msg)
		}
		return nil, "", nil, Invalid(field, "%v", err)
	}
	tree, err = decodeTree(raw)
	if err != nil {
		return nil, "", nil, Invalid(field, "not valid JSON: %v", err)
	}
	return canonical, sum, tree, nil
}

// decodeTree decodes one JSON value with numbers kept as json.Number and
// refuses trailing data.
func decodeTree(raw []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// decodeStrict decodes one JSON value into dst with unknown fields
// refused, numbers kept as json.Number, and trailing data refused.
func decodeStrict(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// decodeTyped checks tree (the generic decoding of raw) against the shape
// of dst with exact member names, then decodes raw into dst strictly.
func decodeTyped(raw []byte, tree any, path string, dst any) error {
	if err := checkShape(tree, reflect.TypeOf(dst).Elem(), path); err != nil {
		return err
	}
	if err := decodeStrict(raw, dst); err != nil {
		return Invalid(path, "%v", err)
	}
	return nil
}

var numberType = reflect.TypeOf(json.Number(""))

// checkShape checks that v, a value decoded with UseNumber, has the JSON shape
// of t: objects for structs with only the members their json tags name,
// spelled exactly; lists for slices; strings; numbers for json.Number. null is
// refused everywhere.
func checkShape(v any, t reflect.Type, path string) error {
	if v == nil {
		return Invalid(path, "must not be null: leave an optional member out instead")
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkShape(v, t.Elem(), path)
	case reflect.String:
		if t == numberType {
			if _, ok := v.(json.Number); !ok {
				return Invalid(path, "must be a number, not %s", jsonType(v))
			}
			return nil
		}
		if _, ok := v.(string); !ok {
			return Invalid(path, "must be a string, not %s", jsonType(v))
		}
		return nil
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return Invalid(path, "must be a list, not %s", jsonType(v))
		}
		for i, e := range list {
			if err := checkShape(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		// A map member (tool_call arguments) is any JSON object: what it
		// holds is somebody else's tool's business, shown to the person whole.
		if _, ok := v.(map[string]any); !ok {
			return Invalid(path, "must be an object, not %s", jsonType(v))
		}
		return nil
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return Invalid(path, "must be an object, not %s", jsonType(v))
		}
		names := make([]string, 0, t.NumField())
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			names = append(names, name)
			fields[name] = t.Field(i).Type
		}
		for _, k := range sortedKeys(obj) {
			if _, ok := fields[k]; !ok {
				return Invalid(path+"."+clip(k), "unknown member: %s takes only %s; a person must never sign what the page does not show", path, strings.Join(names, ", "))
			}
		}
		for _, name := range names {
			if mv, ok := obj[name]; ok {
				if err := checkShape(mv, fields[name], path+"."+name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return Invalid(path, "cannot be checked") // not reached: every struct used is made of the kinds above
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// clip shortens a value quoted back in a refusal.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= 64 {
		return s
	}
	r := []rune(s)
	return string(r[:64]) + "…"
}

// checkInt reads n as an exact integer of at least min and at most 2^53-1.
// The decimal value counts, not the spelling: 1.0 and 1e3 are integers, 1.5
// and 1e-1 are not. The exponent is bounded before any arithmetic.
func checkInt(field string, n json.Number, min int64) (int64, error) {
	s := string(n)
	v, ok, big := exactInt(s)
	if !ok {
		return 0, Invalid(field, "must be an integer, got %s", clip(s))
	}
	if big || v > maxSafeInt {
		return 0, Invalid(field, "must be at most %d (2^53-1), got %s", int64(maxSafeInt), clip(s))
	}
	if v < min {
		return 0, Invalid(field, "must be at least %d, got %s", min, clip(s))
	}
	return v, nil
}

// exactInt parses a JSON number literal. ok is false when it is not an
// exact integer; big is true when its magnitude is beyond 2^53-1 (v is then
// meaningless).
func exactInt(s string) (v int64, ok, big bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expStr, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false, false
	}
	exp := 0
	if hasExp {
		e := strings.TrimPrefix(expStr, "+")
		eneg := strings.HasPrefix(e, "-")
		e = strings.TrimLeft(strings.TrimPrefix(e, "-"), "0")
		if strings.Trim(e, "0123456789") != "" {
			return 0, false, false
		}
		if len(e) > 6 {
			e = "999999" // far beyond any double; keeps the arithmetic bounded
		}
		if e != "" {
			x, _ := strconv.Atoi(e)
			exp = x
		}
		if eneg {
			exp = -exp
		}
	}
	exp -= len(frac)
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return 0, true, false // zero, -0 included
	}
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if exp < 0 {
		return 0, false, false
	}
	if len(digits)+exp > 16 {
		return 0, true, true
	}
	x, err := strconv.ParseInt(digits+strings.Repeat("0", exp), 10, 64)
	if err != nil {
		return 0, true, true
	}
	if neg {
		x = -x
	}
	return x, true, false
}

func isHex(s string, lower bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		case !lower && c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// checkCommitSHA checks a git commit sha: 7 to 64 lower-case hex characters.
func checkCommitSHA(field, s string) error {
	if len(s) < 7 || len(s) > 64 || !isHex(s, true) {
		return Invalid(field, "must be a commit sha, 7 to 64 lower-case hex characters, got %q", clip(s))
	}
	return nil
}

func isRepoPart(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkRepo checks "owner/name", each part of [A-Za-z0-9._-]+.
func checkRepo(field, repo string, present bool) error {
	if !present || repo == "" {
		return Invalid(field, `required: the repository, "owner/name"`)
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !isRepoPart(owner) || !isRepoPart(name) || len(repo) > 200 {
		return Invalid(field, `must be "owner/name", each part of letters, digits, ".", "_" and "-", got %q`, clip(repo))
	}
	return nil
}
