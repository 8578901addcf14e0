package adminapi

import (
	"testing"
	"time"
)

// TestRegularBackendJSON checks that a listing's backend prints as
// poundBackend's object does, in every style, for regular backends of
// every shape and for the other kinds.
func TestRegularBackendJSON(t *testing.T) {
	base := Backend{Address: "10.0.0.1", Port: 80, Enabled: true, Alive: true, Priority: 5,
		ConnTimeout: 15 * time.Second, IOTimeout: 15 * time.Second, WSTimeout: 600 * time.Second}
	with := func(f func(*Backend)) Backend { b := base; f(&b); return b }
	cases := []struct {
		name string
		b    Backend
	}{
		{"plain", base},
		{"IPv6", with(func(b *Backend) { b.Address = "::1" })},
		{"UNIX socket", with(func(b *Backend) { b.Address, b.Port = "/run/app.sock", 0 })},
		{"escapes and UTF-8", with(func(b *Backend) { b.Address, b.Port, b.ServerName = "/run/\"a\"\\é\x01\xff", 0, "x\ny" })},
		{"dead, disabled", with(func(b *Backend) { b.Alive, b.Enabled = false, false })},
		{"emergency", with(func(b *Backend) { b.Emergency, b.Group = true, 3 })},
		{"matrix child", with(func(b *Backend) { b.HasParent, b.Parent, b.Group = true, 2, 10 })},
		{"HTTPS with SNI", with(func(b *Backend) { b.HTTPS, b.ServerName = true, "app.example" })},
		{"tunnel", with(func(b *Backend) { b.Tunnel = true })},
		{"negative and odd numbers", with(func(b *Backend) { b.Priority, b.Group, b.ConnTimeout = -1, 1<<40, 1500*time.Millisecond })},
		{"requests", with(func(b *Backend) {
			b.Requests, b.RequestTimeAvg, b.RequestTimeStddev = 14, 1500*time.Microsecond, 3*time.Millisecond
			b.ResponseTime = 1234567 * time.Nanosecond
		})},
		{"no response time", with(func(b *Backend) { b.Requests, b.ResponseTime = 3, -1 })},
		{"tiny response time", with(func(b *Backend) { b.ResponseTime = 7 * time.Nanosecond })},
		{"redirect", Backend{Kind: KindRedirect, Enabled: true, Alive: true, RedirectCode: 301, RedirectURL: "http://x/"}},
		{"error", Backend{Kind: KindError, ErrorStatus: 503}},
		{"matrix", Backend{Kind: KindMatrix, Hostname: "db.example", ResolveMode: "all"}},
		{"control", Backend{Kind: KindControl, Enabled: true, Alive: true, Priority: 1}},
	}
	for _, tc := range cases {
		for _, o := range []poundOpts{{}, {stats: true}, {requests: true}, {stats: true, requests: true}} {
			for _, st := range []jsonStyle{poundCompact, poundStyle(2), zproxyCompact} {
				b := tc.b
				got := encodeJSON(jarray{poundBackendValue(&b, o)}, st)
				want := encodeJSON(jarray{poundBackendOpts(&b, o)}, st)
				if string(got) != string(want) {
					t.Errorf("%s (%+v, style %+v):\n%s\nwant\n%s", tc.name, o, st, got, want)
				}
				if o == (poundOpts{}) && st == poundCompact {
					if plain := encodeJSON(poundBackend(&b, false), st); string(want) != "["+string(plain)+"]" {
						t.Errorf("%s: %s, poundBackend gives %s", tc.name, want, plain)
					}
				}
			}
		}
	}
}
