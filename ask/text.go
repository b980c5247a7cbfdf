package ask

// Validation of an ask's own words and links (seed 001, approvals_create).
// Characters are counted as runes. One-line fields (title, agent) refuse line
// breaks, control characters, U+2028/U+2029 and bidirectional override and
// isolate characters; the other text fields allow tab and line breaks but no
// other control character. Required means not blank (white space alone is
// blank). Choices where the seed is vague: summary is optional; approve_means
// and deny_means may span lines; the agent label is optional, one line.

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValidateAskText checks the title, summary, approve_means, deny_means and
// agent label of an ask: title one line of at most 120 characters, required
// (the only text a push shows); summary at most 500; approve_means and
// deny_means at most 300 each and both required, since a person cannot judge
// an ask without them; the agent label, shown to the person and never an
// identity, one line of at most 64.
func ValidateAskText(title, summary, approveMeans, denyMeans, agentLabel string) error {
	if err := checkText("title", title, 120, true, true); err != nil {
		return err
	}
	if err := checkText("summary", summary, 500, false, false); err != nil {
		return err
	}
	if err := checkText("approve_means", approveMeans, 300, false, true); err != nil {
		return Invalid("approve_means", "%s: say what approving makes you do; a person cannot judge an ask without it", err.(*Refusal).Msg)
	}
	if err := checkText("deny_means", denyMeans, 300, false, true); err != nil {
		return Invalid("deny_means", "%s: say what denying makes you do; a person cannot judge an ask without it", err.(*Refusal).Msg)
	}
	return checkText("agent", agentLabel, 64, true, false)
}

// MaxCheckCodeShownIn is the most characters check_code_shown_in takes.
const MaxCheckCodeShownIn = 80

// ValidateCheckCodeShownIn checks where an agent says it shows the check
// code ("this chat", "the terminal on build-eu"): optional, one line of at
// most MaxCheckCodeShownIn characters, since the ask page shows it inside a
// sentence beside the codes.
func ValidateCheckCodeShownIn(where string) error {
	if err := checkText("check_code_shown_in", where, MaxCheckCodeShownIn, true, false); err != nil {
		return Invalid("check_code_shown_in", "%s: say in a few words where you show the check code, like \"this chat\" or \"the terminal on build-eu\"", err.(*Refusal).Msg)
	}
	return nil
}

// ValidateLinks checks an ask's links: at most 20, each an absolute https URL
// with a host (no user info) of at most 2000 characters.
func ValidateLinks(links []string) error {
	if len(links) > 20 {
		return Invalid("links", "at most 20 links, got %d", len(links))
	}
	for i, l := range links {
		if err := checkHTTPSURL(fmt.Sprintf("links[%d]", i), l, true); err != nil {
			return err
		}
	}
	return nil
}

// badRune reports the first character text may not hold: invalid UTF-8,
// control characters (in multi-line text tab, LF and CR are allowed),
// bidirectional override and isolate characters, and the line and paragraph
// separators U+2028 and U+2029.
func badRune(s string, oneLine bool) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return r, true
			}
		}
		switch {
		case !oneLine && (r == '\n' || r == '\t' || r == '\r'):
		case unicode.IsControl(r):
			return r, true
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			return r, true
		case r == 0x2028 || r == 0x2029: // JSON encoders escape them: returned bytes would differ
			return r, true
		}
	}
	return 0, false
}

// checkText checks a text field: required (not blank), at most max characters
// (runes), and free of the characters badRune refuses.
func checkText(field, s string, max int, oneLine, required bool) error {
	if required && strings.TrimSpace(s) == "" {
		return Invalid(field, "required: a non-empty text of at most %d characters", max)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return Invalid(field, "at most %d characters, got %d", max, n)
	}
	if r, bad := badRune(s, oneLine); bad {
		if oneLine {
			return Invalid(field, "must be one line of plain text: no line breaks, control or bidirectional override characters (found U+%04X)", r)
		}
		return Invalid(field, "must be plain text: no control characters other than tab and line breaks, no bidirectional override characters (found U+%04X)", r)
	}
	return nil
}

// checkHTTPSURL checks an absolute https URL with a host and no user info, of
// at most 2000 characters.
func checkHTTPSURL(field, s string, required bool) error {
	if s == "" {
		if required {
			return Invalid(field, "required: an absolute https URL")
		}
		return nil
	}
	if n := utf8.RuneCountInString(s); n > 2000 {
		return Invalid(field, "at most 2000 characters, got %d", n)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
			return Invalid(field, "must be an absolute https URL without white space or control characters")
		}
	}
	u, err := url.Parse(s)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return Invalid(field, "must be an absolute https URL with a host (https://host/…), got %q", clip(s))
	}
	if u.User != nil {
		return Invalid(field, "must not carry user info (user@ or user:password@) before the host")
	}
	return nil
}

// CheckOneLine checks a required one-line text of at most max characters, for
// callers outside this package (the work board's names and titles).
func CheckOneLine(field, s string, max int) error { return checkText(field, s, max, true, true) }

// CheckText checks an optional multi-line text of at most max characters.
func CheckText(field, s string, max int) error { return checkText(field, s, max, false, false) }

// CheckOneLineOptional checks an optional one-line text of at most max characters.
func CheckOneLineOptional(field, s string, max int) error {
	return checkText(field, s, max, true, false)
}
