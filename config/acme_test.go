package config

import "testing"

func TestBadHostName(t *testing.T) {
	for _, tc := range []struct {
		name, host string
		ok         bool
	}{
		{"plain", "www.example.com", true},
		{"digits and hyphens", "a-1.b2.example", true},
		{"punycode", "xn--bcher-kva.example", true},
		{"63-byte label", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example", true},
		{"64-byte label", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example", false},
		{"empty", "", false},
		{"single label", "localhost", false},
		{"wildcard", "*.example.com", false},
		{"inner wildcard", "a.*.example.com", false},
		{"IPv4", "192.0.2.1", false},
		{"numeric TLD", "host.123", false},
		{"underscore", "_acme.example.com", false},
		{"leading hyphen", "-a.example.com", false},
		{"trailing hyphen", "a-.example.com", false},
		{"empty label", "a..example.com", false},
		{"upper case (callers lower-case first)", "A.example.com", false},
		{"space", "a b.example.com", false},
		{"IPv6", "::1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why := badHostName(tc.host); (why == "") != tc.ok {
				t.Errorf("badHostName(%q) = %q, want ok=%v", tc.host, why, tc.ok)
			}
		})
	}
}
