package policy

import "testing"

func TestAlwaysAskClassifier(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // the category, or "" when a policy may approve it
	}{
		// Harmless asks a policy may approve.
		{"Review the onboarding doc draft", ""},
		{"Add a screenshot to the style guide", ""},
		{"Fix typos in the FAQ page", ""},
		{"Rename a variable in the parser for clarity", ""},
		{"Update the changelog wording", ""},
		{"Tidy the README headings", ""},
		{"Add a unit test for the date formatter", ""},
		{"Reword the error message for empty input", ""},
		{"Sort the glossary alphabetically", ""},
		{"Comment the cache eviction code", ""},
		{"Bump the copyright year in the footer", ""},
		{"Translate the welcome text into French", ""},
		{"Draft notes for Thursday's design review", ""},
		{"Runway planning notes", ""},                // "run" only as a whole word
		{"Merchandise photos for the catalogue", ""}, // "merge" only as a whole word
		{"Prodigy chess puzzle explainer", ""},       // "prod" only as a whole word
		{"Rolling pin recipe card", "a roll or release"},
		// Each always-ask category, both by its plain word and a variant.
		{"Merge #900 into main", "a merge"},
		{"Squash and rebase the feature branch", "a merge"},
		{"Roll out web 2.4 to everyone", "a roll or release"},
		{"Cut the 2.4 release", "a roll or release"},
		{"Deploy the API to staging", "a roll or release"},
		{"Ship the new pricing page", "a roll or release"},
		{"Touches production traffic", "a roll or release"},
		{"Run the cleanup script nightly", "a run"},
		{"Execute the backfill job", "a run"},
		{"Apply the schema migration", "a run"},
		{"Patch CVE-2026-1234 in the image library", "security"},
		{"Rotate the API key for the mailer", "security"},
		{"Reset a user's password", "security"},
		{"Update the TLS certificate", "security"},
		{"Issue a refund of $40 to a customer", "finance"},
		{"Change the invoice template totals", "finance"},
		{"Wire the quarterly budget transfer", "finance"},
		{"Sign the vendor contract", "legal"},
		{"Switch the library license to MIT", "legal"},
		{"Answer the GDPR request", "legal"},
		{"Delete the stale feature flags", "a delete"},
		{"Drop the unused table", "a delete"},
		{"Purge old logs from the bucket", "a delete"},
		{"Force-push the cleaned history", "a delete"},
		{"Share the confidential roadmap", "classified material"},
		{"Export customer data for analysis", "classified material"},
		{"Grant Bob write access to the repo", "a permission or policy change"},
		{"Make Carol an admin", "a permission or policy change"},
		{"Change the retention policy", "a permission or policy change"},
		{"Turn on auto-approve for the docs bot", "a permission or policy change"},
		{"Harmless title\n[risk: high]", "security"},
		{"Harmless title\n[effect: production]", "a roll or release"},
		{"MERGE THE BRANCH", "a merge"},
		{"déployer? no: delete the cache", "a delete"},
	} {
		if got := AlwaysAsks(tc.text); got != tc.want {
			t.Errorf("AlwaysAsks(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
