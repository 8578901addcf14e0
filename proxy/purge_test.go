package proxy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"lbd/config"
	"lbd/http1"
)

const purgeRequest = "PURGE /index.html?q=1 HTTP/1.1\r\nHost: WWW.example.com\r\n\r\n"

// TestPurgeMethod drives the PURGE method through a caching memory proxy
// (the client is 127.0.0.1).
func TestPurgeMethod(t *testing.T) {
	in := &config.ACL{Nets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	out := &config.ACL{Nets: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	tests := []struct {
		name     string
		acl      *config.ACL
		parser   bool // the listener's parser knows PURGE
		requests []string
		want     []string // status line of each answer
	}{
		{name: "stored, then nothing", acl: in, parser: true,
			requests: []string{purgeRequest, purgeRequest},
			want:     []string{"HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found"}},
		{name: "absolute form", acl: in, parser: true,
			requests: []string{"PURGE http://www.example.com/index.html?q=1 HTTP/1.1\r\nHost: www.example.com\r\n\r\n"},
			want:     []string{"HTTP/1.1 200 OK"}},
		{name: "client outside the ACL", acl: out, parser: true,
			requests: []string{purgeRequest}, want: []string{"HTTP/1.1 403 "}},
		{name: "service without CachePurge", parser: true,
			requests: []string{purgeRequest}, want: []string{"HTTP/1.1 400 "}},
		{name: "listener without a CachePurge service", acl: in,
			requests: []string{purgeRequest}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, st, client, be := newCachingMemProxy(t, 100)
			svc := st.Router.Services[0]
			svc.Cfg.SetRare().Cache = &config.Cache{Purge: tc.acl}
			st.Limits.Purge = tc.parser
			for i, req := range tc.requests {
				client.in, client.out = []byte(req), client.out[:0]
				c.dl = lazyDeadline{}
				if !tc.parser {
					// Refused by the parser, as any unknown method: the
					// serving loop writes the error page.
					client.off, c.r, c.w = 0, 0, 0
					var e *http1.Error
					if err := c.readHead(st); !errors.As(err, &e) || e.Status != 400 {
						t.Fatalf("request %d: parser said %v, want a 400", i, err)
					}
					continue
				}
				cycle(c, st, client)
				if got := string(client.out); !strings.HasPrefix(got, tc.want[i]) {
					t.Fatalf("request %d: got %.120q, want %q", i, got, tc.want[i])
				}
			}
			// Whether the stored response survived: a GET hits or misses.
			stored := len(tc.want) == 0 || tc.want[0] != "HTTP/1.1 200 OK"
			before := be.wrote
			client.in, client.out = []byte(benchRequest), client.out[:0]
			if !cycle(c, st, client) {
				t.Fatalf("GET after the purge failed: %.200q", client.out)
			}
			if hit := be.wrote == before; hit != stored {
				t.Fatalf("GET after the purge: hit %v, want %v", hit, stored)
			}
		})
	}
}
