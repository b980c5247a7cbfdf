package ask

import (
	"strings"
	"testing"
)

// The vectors: SHA-256 of "", "abc" and "countersign" (computed with
// Python's hashlib and read by hand: 0xe3b0 = 58288, 0xba78 = 47736,
// 0xeedf = 61151), and made-up hashes at the edges of the rule.
func TestCheckCodeIsTheFirstTwoBytesOfTheHashModHundred(t *testing.T) {
	cases := []struct {
		name, sha256, want string
	}{
		{"the hash of nothing", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "88"},
		{"the hash of abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "36"},
		{"the hash of countersign", "eedfd749e2646de3fb66b471ce392177a35f36295d66514234627f7b5a28097b", "51"},
		{"a code under ten is zero-padded", "0007" + strings.Repeat("0", 60), "07"},
		{"10000 is a round hundred: 00", "2710" + strings.Repeat("f", 60), "00"},
		{"the largest uint16", "ffff" + strings.Repeat("0", 60), "35"},
		{"upper-case hex reads the same", "EEDFD749E2646DE3FB66B471CE392177A35F36295D66514234627F7B5A28097B", "51"},
		{"a hash too short has no code", "eedf", ""},
		{"a hash that is not hex has no code", "zz" + strings.Repeat("0", 62), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckCode(tc.sha256); got != tc.want {
				t.Fatalf("CheckCode(%s) = %q, want %q", tc.sha256, got, tc.want)
			}
		})
	}
}

func TestTheRiskiestAsksNeedACheckCode(t *testing.T) {
	cases := []struct {
		kind, payload string
		want          bool
	}{
		{KindRoll, `{"roll":{}}`, true},
		{KindToolCall, `{"tool_call":{}}`, true},
		{KindRun, `{"run":{"effect":"production"}}`, true},
		{KindRun, `{"run":{"effect":"remote"}}`, true},
		{KindRun, `{"run":{"effect":"local_write"}}`, false},
		{KindRun, `{"run":{"effect":"read_only"}}`, false},
		{KindRun, `not json`, true},
		{KindPullRequest, `{"pull_request":{}}`, false},
		{KindDecision, `{"decision":{}}`, false},
		{KindAutoApprove, `{"auto_approve":{}}`, false},
		{KindAgentRequest, `{}`, false},
	}
	for _, tc := range cases {
		if got := NeedsCheckCode(tc.kind, tc.payload); got != tc.want {
			t.Errorf("NeedsCheckCode(%s, %s) = %t, want %t", tc.kind, tc.payload, got, tc.want)
		}
	}
}
