package service

import (
	"net/netip"
	"testing"

	"lbd/config"
	"lbd/http1"
	"lbd/rules"
)

func mustPattern(t testing.TB, kind config.PatternKind, text string, icase bool) *config.Pattern {
	t.Helper()
	p, err := config.NewPattern(kind, text, icase)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parse turns a raw head into a request and the buffer it aliases.
func parse(t testing.TB, raw string) (*http1.Request, []byte) {
	t.Helper()
	buf := []byte(raw)
	req := &http1.Request{}
	if err := http1.ParseRequestHead(buf, req, nil); err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return req, buf[:req.HeadLen]
}

func svc(name string, conds ...*config.Condition) *Service {
	s, err := New(&config.Service{Name: name, Conditions: conds}, Options{})
	if err != nil {
		panic(err)
	}
	return s
}

// route runs the router on a parsed request, as the proxy does.
func route(r *Router, st *rules.State, req *http1.Request, head []byte) *Service {
	st.Begin(netip.Addr{}, 0)
	LoadRequest(st, req, head)
	s, err := r.Route(st)
	if err != nil {
		panic(err)
	}
	return s
}

func TestRouteFirstMatchWins(t *testing.T) {
	re := func(s string) *config.Pattern { return mustPattern(t, config.MatchRegex, s, false) }
	router := &Router{Services: []*Service{
		svc("api", &config.Condition{Kind: config.CondURL, Pattern: re("^/api/")}),
		svc("head", &config.Condition{Kind: config.CondHeader, Pattern: re("^X-Svc: *b$")}),
		svc("deny", &config.Condition{Kind: config.CondHeader, Not: true, Pattern: re("^X-Block:")},
			&config.Condition{Kind: config.CondPath, Pattern: mustPattern(t, config.MatchSuffix, ".php", true)}),
		svc("host", &config.Condition{Kind: config.CondHost, Pattern: mustPattern(t, config.MatchExact, "example.org", true)}),
		svc("qp", &config.Condition{Kind: config.CondQueryParam, Name: "lang", Pattern: mustPattern(t, config.MatchExact, "de", false)}),
		svc("or", &config.Condition{Kind: config.CondMatch, Or: true, Sub: []*config.Condition{
			{Kind: config.CondMethod, Pattern: mustPattern(t, config.MatchExact, "DELETE", false)},
			{Kind: config.CondPath, Pattern: mustPattern(t, config.MatchPrefix, "/admin", false)},
		}}),
	}}
	cases := []struct {
		name, raw, want string
	}{
		{"url regex", "GET /api/v1 HTTP/1.1\r\nHost: a\r\n\r\n", "api"},
		{"header line regex", "GET / HTTP/1.1\r\nHost: a\r\nX-Svc:   b\r\n\r\n", "head"},
		{"not header plus suffix icase", "GET /x.PHP HTTP/1.1\r\nHost: a\r\n\r\n", "deny"},
		{"denied header skips service", "GET /x.php HTTP/1.1\r\nHost: a\r\nX-Block: 1\r\n\r\n", ""},
		{"host exact icase", "GET / HTTP/1.1\r\nHost: EXAMPLE.org\r\n\r\n", "host"},
		{"query param exact name", "GET /?xlang=de&lang=de HTTP/1.1\r\nHost: a\r\n\r\n", "qp"},
		{"query param similar name only", "GET /?xlang=de HTTP/1.1\r\nHost: a\r\n\r\n", ""},
		{"match or: method", "DELETE /x HTTP/1.1\r\nHost: a\r\n\r\n", "or"},
		{"match or: path prefix", "GET /admin/x HTTP/1.1\r\nHost: a\r\n\r\n", "or"},
		{"nothing matches", "GET /nothing HTTP/1.1\r\nHost: a\r\n\r\n", ""},
	}
	var st rules.State
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, head := parse(t, tc.raw)
			got := ""
			if s := route(router, &st, req, head); s != nil {
				got = s.Name
			}
			if got != tc.want {
				t.Fatalf("routed to %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDisabledServiceIsSkipped(t *testing.T) {
	a, b := svc("a"), svc("b")
	a.SetEnabled(false)
	r := &Router{Services: []*Service{a, b}}
	var st rules.State
	req, head := parse(t, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := route(r, &st, req, head); got != b {
		t.Fatalf("routed to %v, want b", got.Name)
	}
}

func TestHeaderLineIsTheReceivedLine(t *testing.T) {
	req, head := parse(t, "GET / HTTP/1.1\r\nHost: x\r\nX-A:  spaced  value\r\n\r\n")
	if got := string(HeaderLine(head, &req.Headers[1])); got != "X-A:  spaced  value" {
		t.Fatalf("line %q", got)
	}
}

func TestRouteDoesNotAllocate(t *testing.T) {
	router := &Router{Services: []*Service{
		svc("api", &config.Condition{Kind: config.CondURL, Pattern: mustPattern(t, config.MatchRegex, "^/api/", false)}),
		svc("static", &config.Condition{Kind: config.CondPath, Pattern: mustPattern(t, config.MatchPrefix, "/static/", false)}),
	}}
	req, head := parse(t, "GET /static/app.js HTTP/1.1\r\nHost: a\r\n\r\n")
	var st rules.State
	if n := testing.AllocsPerRun(1000, func() { route(router, &st, req, head) }); n != 0 {
		t.Fatalf("Route allocates %.1f times", n)
	}
}

func BenchmarkRoute(b *testing.B) {
	router := &Router{Services: []*Service{
		svc("api", &config.Condition{Kind: config.CondURL, Pattern: mustPattern(b, config.MatchRegex, "^/api/", false)}),
		svc("static", &config.Condition{Kind: config.CondPath, Pattern: mustPattern(b, config.MatchPrefix, "/static/", false)}),
		svc("default"),
	}}
	req, head := parse(b, "GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n")
	var st rules.State
	b.ReportAllocs()
	for b.Loop() {
		route(router, &st, req, head)
	}
}
