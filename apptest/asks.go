package apptest

// ExplainedPullRequestAsk is approvals_create's arguments for a pull_request
// ask with everything its page can show: an explanation with effect and risk,
// evidence (a diff, a log, a link), context ids and links; the page of a real
// merge is about this heavy.
func ExplainedPullRequestAsk() map[string]any {
	return map[string]any{
		"kind":          "pull_request",
		"title":         "Merge acme/web#900: fix the login redirect loop",
		"summary":       "Users on Safari bounce between /login and /app after their session expires.",
		"agent":         "merge queue",
		"approve_means": "I merge #900 into main; nothing rolls until the next train",
		"deny_means":    "#900 stays open and I tell its author why",
		"payload": map[string]any{"pull_request": map[string]any{
			"repo": "acme/web", "number": 900, "head": "4f2c9e1a7b3d", "title": "Fix the login redirect loop",
		}},
		"context": map[string]any{
			"plan_id": "plan_q2_auth", "plan_item": "item_7", "job_id": "job_42",
			"commits": []map[string]any{{"repo": "acme/web", "sha": "4f2c9e1a7b3d", "subject": "auth: stop redirecting expired sessions twice"}},
			"explanation": map[string]any{
				"what":   "Merge the fix for the redirect loop.",
				"why":    "12% of Safari sessions loop after expiry.",
				"effect": map[string]any{"kind": "remote", "ships": "web 2.3.1", "summary": "One handler changes.", "touches": []string{"auth/redirect.go"}},
				"risk":   map[string]any{"level": "medium", "text": "Touches the sign-in path; covered by 14 tests."},
				"evidence": []map[string]any{
					{"kind": "diff", "path": "auth/redirect.go", "text": "@@ -40,7 +40,9 @@ func redirect(w, r) {\n-\tif expired(r) { http.Redirect(w, r, \"/login\", 302) }\n+\tif expired(r) && r.URL.Path != \"/login\" {\n+\t\thttp.Redirect(w, r, \"/login\", 302)\n+\t}\n \treturn\n"},
					{"kind": "log", "title": "CI", "text": "ok  acme/web/auth  0.412s\nok  acme/web/app   1.020s"},
					{"kind": "link", "title": "CI run 5512", "url": "https://ci.example.com/runs/5512"},
				},
			},
		},
		"links": []string{"https://github.com/acme/web/pull/900"},
	}
}
