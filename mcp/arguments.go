package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/countersign/countersign/models"
)

// strictArguments refuses tool arguments that name a member twice in one
// object, at any depth. The SDK decodes arguments into a map before a tool
// sees them, where the last of two "repo" members would silently win: a
// person must sign exactly what the agent sent, so such a call is refused.
func strictArguments(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walkValue(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return models.Invalid("", "the arguments hold more than one JSON value")
	}
	return nil
}

func walkValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return models.Invalid(path, "not valid JSON: %v", err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return models.Invalid(path, "not valid JSON: %v", err)
			}
			name := t.(string)
			child := name
			if path != "" {
				child = path + "." + name
			}
			if seen[name] {
				return models.Invalid(child, "this member appears twice; send each member once")
			}
			seen[name] = true
			if err := walkValue(dec, child); err != nil {
				return err
			}
		}
		_, err = dec.Token() // }
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ]
	}
	if err != nil {
		return models.Invalid(path, "not valid JSON: %v", err)
	}
	return nil
}

// textResult is the text content of a tool result: the output as JSON with
// no HTML escaping, so a payload's canonical bytes come back exactly as stored.
func textResult(out any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
}
