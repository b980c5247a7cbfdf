package ask

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidateAskText(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	type in struct{ title, summary, approve, deny, agent string }
	ok := in{"Merge #900 into main", "Retries for the fetcher.\nNothing rolls.", "I merge #900; nothing rolls", "#900 stays open", "claude-code"}
	with := func(f func(*in)) in { v := ok; f(&v); return v }
	cases := []struct {
		name  string
		in    in
		code  Code
		field string
	}{
		{"all good", ok, "", ""},
		{"no summary, no agent", with(func(v *in) { v.summary, v.agent = "", "" }), "", ""},
		{"title missing", with(func(v *in) { v.title = "" }), InvalidArgument, "title"},
		{"title blank", with(func(v *in) { v.title = " \t " }), InvalidArgument, "title"},
		{"title 120 characters", with(func(v *in) { v.title = long(120) }), "", ""},
		{"title 121 characters", with(func(v *in) { v.title = long(121) }), InvalidArgument, "title"},
		{"title emoji with joiners", with(func(v *in) { v.title = "Ship 👨‍👩‍👧 🚀" }), "", ""},
		{"title two lines", with(func(v *in) { v.title = "Merge\n#900" }), InvalidArgument, "title"},
		{"title carriage return", with(func(v *in) { v.title = "Merge\r#900" }), InvalidArgument, "title"},
		{"title tab", with(func(v *in) { v.title = "Merge\t#900" }), InvalidArgument, "title"},
		{"title escape character", with(func(v *in) { v.title = "Merge \x1b[2J#900" }), InvalidArgument, "title"},
		{"title line separator", with(func(v *in) { v.title = "Merge\u2028#900" }), InvalidArgument, "title"},
		{"title bidi override", with(func(v *in) { v.title = "Merge \u202e009#" }), InvalidArgument, "title"},
		{"title invalid UTF-8", with(func(v *in) { v.title = "Merge \xff" }), InvalidArgument, "title"},
		{"summary 500 characters", with(func(v *in) { v.summary = long(500) }), "", ""},
		{"summary 501 characters", with(func(v *in) { v.summary = long(501) }), InvalidArgument, "summary"},
		{"summary with a bell", with(func(v *in) { v.summary = "a\ab" }), InvalidArgument, "summary"},
		{"approve_means missing", with(func(v *in) { v.approve = "" }), InvalidArgument, "approve_means"},
		{"approve_means blank", with(func(v *in) { v.approve = "  " }), InvalidArgument, "approve_means"},
		{"approve_means 300 characters", with(func(v *in) { v.approve = long(300) }), "", ""},
		{"approve_means 301 characters", with(func(v *in) { v.approve = long(301) }), InvalidArgument, "approve_means"},
		{"deny_means missing", with(func(v *in) { v.deny = "" }), InvalidArgument, "deny_means"},
		{"deny_means 300 characters", with(func(v *in) { v.deny = long(300) }), "", ""},
		{"deny_means 301 characters", with(func(v *in) { v.deny = long(301) }), InvalidArgument, "deny_means"},
		{"deny_means over two lines", with(func(v *in) { v.deny = "#900 stays open\nI say so on the PR" }), "", ""},
		{"agent 64 characters", with(func(v *in) { v.agent = long(64) }), "", ""},
		{"agent 65 characters", with(func(v *in) { v.agent = long(65) }), InvalidArgument, "agent"},
		{"agent two lines", with(func(v *in) { v.agent = "bot\nadmin" }), InvalidArgument, "agent"},
		{"first refusal is the title", in{"", "", "", "", ""}, InvalidArgument, "title"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateAskText(c.in.title, c.in.summary, c.in.approve, c.in.deny, c.in.agent)
			wantRefusal(t, err, c.code, c.field)
		})
	}
}

func TestValidateAskTextMeansMessage(t *testing.T) {
	err := ValidateAskText("t", "", "", "x", "")
	wantRefusal(t, err, InvalidArgument, "approve_means")
	if !strings.Contains(err.Error(), "cannot judge") {
		t.Fatalf("refusal should say why approve_means is needed: %v", err)
	}
}

func TestValidateLinks(t *testing.T) {
	n := func(k int) []string {
		out := make([]string, k)
		for i := range out {
			out[i] = fmt.Sprintf("https://example.com/%d", i)
		}
		return out
	}
	cases := []struct {
		name  string
		links []string
		code  Code
		field string
	}{
		{"none", nil, "", ""},
		{"empty list", []string{}, "", ""},
		{"one with path, query and fragment", []string{"https://github.com/acme/api/pull/900?tab=files#diff"}, "", ""},
		{"with a port", []string{"https://ci.example:8443/run/1"}, "", ""},
		{"20 links", n(20), "", ""},
		{"21 links", n(21), InvalidArgument, "links"},
		{"http", []string{"https://a.example", "http://b.example"}, InvalidArgument, "links[1]"},
		{"fourth refused", append(n(3), "ftp://files.example/x"), InvalidArgument, "links[3]"},
		{"relative", []string{"/acme/api"}, InvalidArgument, "links[0]"},
		{"no scheme", []string{"github.com/acme"}, InvalidArgument, "links[0]"},
		{"no host", []string{"https:///x"}, InvalidArgument, "links[0]"},
		{"scheme only", []string{"https:"}, InvalidArgument, "links[0]"},
		{"empty", []string{""}, InvalidArgument, "links[0]"},
		{"javascript", []string{"javascript:alert(1)"}, InvalidArgument, "links[0]"},
		{"user info", []string{"https://user:pw@example.com/"}, InvalidArgument, "links[0]"},
		{"leading space", []string{" https://example.com"}, InvalidArgument, "links[0]"},
		{"newline inside", []string{"https://example.com/a\nb"}, InvalidArgument, "links[0]"},
		{"2000 characters", []string{"https://example.com/" + strings.Repeat("a", 2000-20)}, "", ""},
		{"2001 characters", []string{"https://example.com/" + strings.Repeat("a", 2001-20)}, InvalidArgument, "links[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRefusal(t, ValidateLinks(c.links), c.code, c.field)
		})
	}
}
