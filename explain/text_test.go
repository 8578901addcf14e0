package explain

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func ptr[T any](v T) *T { return &v }

// sample has every section Write prints.
func sample() *Route {
	return &Route{
		Request: Request{Method: "GET", Target: "/api/x", Version: "HTTP/1.1",
			Headers: []string{"Host: shop.example", "Cookie: sid=abc"}, Client: "10.1.2.3"},
		Listener: Listener{Index: 0, Name: "main", Address: "127.0.0.1:8080", Protocol: "http", Dialect: "pound", Why: "named by its name"},
		Checks:   []Check{{Check: "request head parses", OK: true}, {Check: "listener enabled", OK: true}},
		Services: []Service{
			{Index: 0, Name: "admin", Pos: "lbd.cfg:7.2-10.4", Verdict: "no match", Conditions: []Step{
				{Test: `acl "office"`, Pos: "lbd.cfg:8.3-14", Subject: ptr("10.1.2.3"), Matched: ptr(false), Holds: ptr(false)}}},
			{Index: 1, Name: "blog", Pos: "lbd.cfg:11.2-14.4", Verdict: "skipped",
				Skipped: "the routing index shows its first condition, on the Host, cannot hold for this request"},
			{Index: 2, Name: "api", Pos: "lbd.cfg:15.2-20.4", Verdict: "matched", Conditions: []Step{
				{Test: `eval "api_path"`, Matched: ptr(true), Holds: ptr(true), Eval: []Step{
					{Test: `path re "^/api/"`, Subject: ptr("/api/x"), Matched: ptr(true), Holds: ptr(true)}}},
				{Test: `header "X-Debug" re "1"`, Not: true, Matched: ptr(false), Holds: ptr(true)},
				{Test: `tbf "%[remoteip]"`, Subject: ptr("10.1.2.3"), Matched: ptr(true), Holds: ptr(true), Detail: "2 token(s) in the bucket (none taken: dry run)"}}},
			{Index: 3, Name: "rest", Global: true, Pos: "lbd.cfg:30.1-33.3", Verdict: "not tried"},
		},
		Service: ptr(2),
		Session: &Session{Type: "COOKIE", ID: "sid", Key: "abc", HasKey: true, Found: true, Backend: ptr(0),
			LastSeen: "2026-01-02T03:04:05Z", Expires: "2026-01-02T03:09:05Z", Why: "pinned to backend 0, which is disabled: the balancer decides and the session moves"},
		Balancer: &Balancer{Algorithm: "LEAST_CONNECTIONS", Mode: "zproxy", ServicePriority: 1, Chosen: ptr(1),
			Why: "LEAST_CONNECTIONS: the lowest (established+pending)/weight, ties to the earlier backend",
			Groups: []Group{
				{Tier: 0, Why: "the backend is chosen in this group", Candidates: []Candidate{
					{Backend: 0, ID: "10.0.0.1-80", Weight: 1, Priority: 1, LatencyNS: -1, Reason: "disabled"},
					{Backend: 1, ID: "10.0.0.2-80", Weight: 2, Priority: 1, Active: 3, Pending: 1, LatencyNS: 1500000, Eligible: true, Available: true, Score: "4/2"},
					{Backend: 2, ID: "10.0.0.3-80", Weight: 1, Priority: 1, Active: 1, LatencyNS: 900000, ConnLimit: 1, Eligible: true, Reason: "at its ConnLimit", Score: "1/1"}}},
				{Tier: 65535, Emergency: true, Why: "not tried: an earlier group has an available backend", Candidates: []Candidate{
					{Backend: 3, ID: "10.0.0.9-80", Weight: 1, Priority: 1, LatencyNS: -1, Eligible: true, Available: true, Score: "0/1"}}}}},
		Backend:  &Backend{Index: 1, ID: "10.0.0.2-80", Address: "10.0.0.2:80", Via: "balancer"},
		Rewrites: []Step{{Action: `set_header "X-Service: api"`}},
		Forwarded: &Forwarded{RequestLine: "GET /api/x HTTP/1.1",
			Headers: []string{"Host: shop.example", "X-Forwarded-For: 10.1.2.3", "X-Service: api"},
			Added:   []string{"X-Forwarded-For: 10.1.2.3", "X-Service: api"}, Removed: []string{"Cookie: sid=abc"}},
		Outcome: `service 1 "api" → backend 1 10.0.0.2:80 (balancer)`,
	}
}

func TestWrite(t *testing.T) {
	cases := map[string]*Route{"route.txt": sample()}
	reply := sample()
	reply.Session, reply.Balancer, reply.Backend, reply.Rewrites, reply.Forwarded = nil, nil, nil, nil, nil
	reply.Checks = append(reply.Checks, Check{Check: "request allowed (xHTTP, CheckURL, MaxRequest)", OK: false, Detail: "answered 405"})
	reply.Services, reply.Service = nil, nil
	reply.Reply = &Reply{Status: 405, Kind: "error", Head: []string{"Content-Type: text/html", "Content-Length: 10"}, Why: "the listener's request checks refuse it"}
	reply.Outcome = "lbd answers 405 itself (error): the listener's request checks refuse it"
	cases["reply.txt"] = reply
	for name, r := range cases {
		var b bytes.Buffer
		if err := Write(&b, r); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s:\n%s\nwant:\n%s", name, b.Bytes(), want)
		}
	}
}
