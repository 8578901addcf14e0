package service

import (
	"testing"

	"lbd/backend"
	"lbd/config"
)

// TestMixedRedirectShare: a Redirect beside regular backends gets its
// priority's share of the requests, as in Pound; alone, or when no
// regular backend is alive, it gets them all.
func TestMixedRedirectShare(t *testing.T) {
	be := backend.New(backend.Options{Address: "127.0.0.1:1", Priority: 3})
	redirect := &config.Backend{Kind: config.BackendRedirect, Priority: 1}
	redirect.SetRare().Redirect = &config.Redirect{Code: 302, URL: "http://x"}
	cases := []struct {
		name     string
		backends []*backend.Backend
		dead     bool
		lo, hi   int // redirected requests out of 4000
	}{
		{name: "priority 1 beside 3: a quarter", backends: []*backend.Backend{be}, lo: 800, hi: 1200},
		{name: "alone: all", lo: 4000, hi: 4000},
		{name: "the regular backend is disabled: all", backends: []*backend.Backend{be}, dead: true, lo: 4000, hi: 4000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(&config.Service{Backends: []*config.Backend{redirect}}, Options{Backends: tc.backends})
			if err != nil {
				t.Fatal(err)
			}
			be.SetEnabled(!tc.dead)
			n := 0
			for i := 0; i < 4000; i++ {
				if s.UseSpecial() {
					n++
				}
			}
			if n < tc.lo || n > tc.hi {
				t.Fatalf("%d of 4000 redirected, want %d..%d", n, tc.lo, tc.hi)
			}
		})
	}
}
