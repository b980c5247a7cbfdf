package models

// Validation of an ask's own words and links (seed 001, approvals_create).
// Characters are counted as runes. One-line fields (title, agent) refuse line
// breaks, control characters, U+2028/U+2029 and bidirectional override and
// isolate characters; the other text fields allow tab and line breaks but no
// other control character. Required means not blank (white space alone is
// blank). Choices where the seed is vague: summary is optional; approve_means
// and deny_means may span lines; the agent label is optional, one line.

import "fmt"

// ValidateAskText checks the title, summary, approve_means, deny_means and
// agent label of an ask: title one line of at most 120 characters, required
// (the only text a push shows); summary at most 500; approve_means and
// deny_means at most 300 each and both required, since a person cannot judge
// an ask without them; the agent label, shown to the person and never an
// identity, one line of at most 64.
func ValidateAskText(title, summary, approveMeans, denyMeans, agentLabel string) error {
	if err := askvText("title", title, 120, true, true); err != nil {
		return err
	}
	if err := askvText("summary", summary, 500, false, false); err != nil {
		return err
	}
	if err := askvText("approve_means", approveMeans, 300, false, true); err != nil {
		return Invalid("approve_means", "%s: say what approving makes you do; a person cannot judge an ask without it", err.(*Error).Msg)
	}
	if err := askvText("deny_means", denyMeans, 300, false, true); err != nil {
		return Invalid("deny_means", "%s: say what denying makes you do; a person cannot judge an ask without it", err.(*Error).Msg)
	}
	return askvText("agent", agentLabel, 64, true, false)
}

// ValidateLinks checks an ask's links: at most 20, each an absolute https URL
// with a host (no user info) of at most 2000 characters.
func ValidateLinks(links []string) error {
	if len(links) > 20 {
		return Invalid("links", "at most 20 links, got %d", len(links))
	}
	for i, l := range links {
		if err := askvHTTPSURL(fmt.Sprintf("links[%d]", i), l, true); err != nil {
			return err
		}
	}
	return nil
}
