package oauth

import (
	"net/netip"
	"testing"
)

func TestPublicAddrJudgesAnEmbeddedIPv4ByItself(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"93.184.216.34", true},
		{"2606:4700:4700::1111", true},
		{"64:ff9b::5db8:d822", true}, // NAT64 of 93.184.216.34
		{"2002:5db8:d822::1", true},  // 6to4 of 93.184.216.34
		{"::ffff:93.184.216.34", true},
		{"10.0.0.1", false},
		{"127.0.0.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.7", false},
		{"0.1.2.3", false},
		{"::1", false},
		{"::", false},
		{"fd00::1", false},
		{"fe80::1", false},
		{"2001:db8::1", false},
		{"::ffff:10.0.0.1", false},
		{"::10.0.0.1", false},
		{"::127.0.0.1", false},
		{"::ffff:0:10.0.0.1", false},
		{"::ffff:0:127.0.0.1", false},
		{"64:ff9b::10.0.0.1", false},
		{"64:ff9b::127.0.0.1", false},
		{"64:ff9b::169.254.169.254", false},
		{"64:ff9b:1::5db8:d822", false},
		{"2002:a00:1::1", false},
		{"2002:7f00:1::1", false},
		{"2002:c0a8:101::1", false},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false},
		{"fec0::1", false},
	} {
		if got := publicAddr(netip.MustParseAddr(tc.addr)); got != tc.public {
			t.Errorf("publicAddr(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
}
