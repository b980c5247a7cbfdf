package proof

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxDepth is how deeply NoDuplicateMembers follows nested objects and
// arrays, as deep as encoding/json itself goes.
const maxDepth = 10000

// NoDuplicateMembers refuses JSON in which an object, at any depth, names a
// member twice (compared after unescaping, so "origin" and "\u006frigin" are
// one name). encoding/json keeps the last of two such members and another
// reader may keep the first: a clientDataJSON with a phishing origin first
// and ours last would read as ours here and as the phishing page's there.
// The error names the member by its dotted path.
func NoDuplicateMembers(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := noDuplicateIn(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// noDuplicateIn reads one value from dec; path is where it stands ("" at the
// top, "a.b." inside members, "a[2]." inside arrays).
func noDuplicateIn(dec *json.Decoder, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	delim, ok := tok.(json.Delim)
	if !ok || delim == '}' || delim == ']' {
		return nil // a scalar (a stray closing delimiter is the decoder's error)
	}
	if depth >= maxDepth {
		return fmt.Errorf("nested deeper than %d", maxDepth)
	}
	if delim == '[' {
		for i := 0; dec.More(); i++ {
			if err := noDuplicateIn(dec, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
	} else {
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("not JSON: %w", err)
			}
			name, _ := tok.(string)
			member := name
			if path != "" {
				member = path + "." + name
			}
			if seen[name] {
				return fmt.Errorf("member %q is named twice", member)
			}
			seen[name] = true
			if err := noDuplicateIn(dec, member, depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("not JSON: %w", err)
	}
	return nil
}
