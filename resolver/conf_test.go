package resolver

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func servers(ss ...string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, s := range ss {
		out = append(out, netip.MustParseAddrPort(s))
	}
	return out
}

func TestParseConf(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		servers  []netip.AddrPort
		timeout  time.Duration
		attempts int
		warns    []string // substrings, in order
	}{
		{name: "empty: localhost", text: "", servers: servers("127.0.0.1:53"), timeout: 5 * time.Second, attempts: 2},
		{name: "servers in order", text: "nameserver 192.0.2.1\n\tnameserver 2001:db8::1\n",
			servers: servers("192.0.2.1:53", "[2001:db8::1]:53"), timeout: 5 * time.Second, attempts: 2},
		{name: "lbd's port extension", text: "nameserver 127.0.0.1:5353\nnameserver [::1]:5300\n",
			servers: servers("127.0.0.1:5353", "[::1]:5300"), timeout: 5 * time.Second, attempts: 2},
		{name: "options and comments", text: "# comment\nsearch example.org\nnameserver 192.0.2.1 # x\noptions ndots:2 timeout:3 attempts:4 rotate\n",
			servers: servers("192.0.2.1:53"), timeout: 3 * time.Second, attempts: 4},
		{name: "options clamped", text: "options timeout:999 attempts:99\n",
			servers: servers("127.0.0.1:53"), timeout: 30 * time.Second, attempts: 5},
		{name: "bad lines warn", text: "nameserver ns.example.org\nnameserver\nnameserver 127.0.0.1:0\noptions timeout:x\n",
			servers: servers("127.0.0.1:53"), timeout: 5 * time.Second, attempts: 2,
			warns: []string{"line 1: nameserver \"ns.example.org\" is not an IP address", "line 2: nameserver without",
				"line 3:", "line 4: bad option timeout:x"}},
		{name: "at most five servers", text: strings.Repeat("nameserver 192.0.2.1\n", 6),
			servers: servers("192.0.2.1:53", "192.0.2.1:53", "192.0.2.1:53", "192.0.2.1:53", "192.0.2.1:53"),
			timeout: 5 * time.Second, attempts: 2, warns: []string{"line 6: more than 5 name servers"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, warns := ParseConf(tc.text)
			if !slices.Equal(c.Servers, tc.servers) || c.Timeout != tc.timeout || c.Attempts != tc.attempts {
				t.Errorf("got %+v, want servers %v timeout %v attempts %d", c, tc.servers, tc.timeout, tc.attempts)
			}
			if len(warns) != len(tc.warns) {
				t.Fatalf("warnings %q, want %q", warns, tc.warns)
			}
			for i, w := range tc.warns {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, warns[i], w)
				}
			}
		})
	}
}
