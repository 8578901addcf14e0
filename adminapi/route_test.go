package adminapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"lbd/explain"
)

// explainingFake is the fake controller with a canned routing explainer.
type explainingFake struct {
	*fakeCtl
	got []explain.Query
}

func (f *explainingFake) ExplainRoute(q explain.Query) (*explain.Route, error) {
	f.got = append(f.got, q)
	switch q.Listener {
	case "9":
		return nil, fmt.Errorf("listener 9: %w", ErrNotFound)
	case "bad":
		return nil, fmt.Errorf("%w: client address %q", ErrInvalid, "x")
	case "boom":
		return nil, errors.New("boom")
	}
	zero := 0
	return &explain.Route{
		Request:  explain.Request{Method: q.Method, Target: q.URL, Version: "HTTP/1.1", Headers: q.Headers, Client: "127.0.0.1"},
		Listener: explain.Listener{Index: 0, Address: "127.0.0.1:80", Protocol: "http", Dialect: "pound", Why: "named"},
		Checks:   []explain.Check{{Check: "request head parses", OK: true}},
		Services: []explain.Service{{Index: 0, Name: "web", Verdict: "matched"}},
		Service:  &zero,
		Backend:  &explain.Backend{Index: 0, ID: "127.0.0.1-8081", Address: "127.0.0.1:8081", Via: "balancer"},
		Outcome:  "service 0 \"web\" → backend 0",
	}, nil
}

func TestRouteEndpoint(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		status                   int
		reason                   string
	}{
		{name: "explained", method: "POST", path: "/route", body: `{"method":"GET","url":"/x","headers":["A: b"]}`, status: 200},
		{name: "trailing slash", method: "POST", path: "/route/", body: `{"method":"GET","url":"/x"}`, status: 200},
		{name: "GET is not the method", method: "GET", path: "/route", status: 405, reason: "POST"},
		{name: "not JSON", method: "POST", path: "/route", body: `GET /`, status: 400, reason: "malformed query"},
		{name: "unknown field", method: "POST", path: "/route", body: `{"method":"GET","url":"/","host":"x"}`, status: 400, reason: `unknown field`},
		{name: "two objects", method: "POST", path: "/route", body: `{"method":"GET","url":"/"}{}`, status: 400, reason: "data after"},
		{name: "no url", method: "POST", path: "/route", body: `{"method":"GET"}`, status: 400, reason: `and a`},
		{name: "no such listener", method: "POST", path: "/route", body: `{"method":"GET","url":"/","listener":"9"}`, status: 404, reason: "listener 9"},
		{name: "bad client", method: "POST", path: "/route", body: `{"method":"GET","url":"/","listener":"bad"}`, status: 400, reason: "client address"},
		{name: "internal error", method: "POST", path: "/route", body: `{"method":"GET","url":"/","listener":"boom"}`, status: 500, reason: "boom"},
		{name: "too large", method: "POST", path: "/route", body: `{"method":"GET","url":"/` + strings.Repeat("a", maxRouteBody) + `"}`, status: 413},
	}
	for dialect := range dialects(newFake()) {
		for _, tc := range cases {
			t.Run(dialect+"/"+tc.name, func(t *testing.T) {
				f := &explainingFake{fakeCtl: newFake()}
				rec := do(dialects(f)[dialect], tc.method, tc.path, tc.body)
				if rec.Code != tc.status {
					t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
				}
				if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
					t.Fatalf("Content-Type %q", ct)
				}
				if tc.status == 200 {
					checkGolden(t, "route_"+strings.ReplaceAll(tc.name, " ", "_")+".json", rec.Body.Bytes())
					return
				}
				if !strings.Contains(rec.Body.String(), `"result":"error"`) || !strings.Contains(rec.Body.String(), tc.reason) {
					t.Fatalf("error body %s, want a JSON error mentioning %q", rec.Body, tc.reason)
				}
			})
		}
	}
}

// TestRouteWithoutExplainer: a controller that cannot explain answers 501.
func TestRouteWithoutExplainer(t *testing.T) {
	rec := do(NewPoundHandler(newFake()), http.MethodPost, "/route", `{"method":"GET","url":"/"}`)
	if rec.Code != http.StatusNotImplemented {
		t.Fatalf("status %d, want 501", rec.Code)
	}
}
