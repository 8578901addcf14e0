package adminapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
	zero, li := 0, 0
	if n, err := strconv.Atoi(q.Listener); err == nil {
		li = n
	}
	return &explain.Route{
		Request:  explain.Request{Method: q.Method, Target: q.URL, Version: "HTTP/1.1", Headers: q.Headers, Client: "127.0.0.1"},
		Listener: explain.Listener{Index: li, Address: "127.0.0.1:80", Protocol: "http", Dialect: "pound", Why: "named"},
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
					checkGolden(t, "route_"+dialect+"_"+strings.ReplaceAll(tc.name, " ", "_")+".json", rec.Body.Bytes())
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

// TestRouteNumbering: POST /route takes and answers a listener number as
// its socket numbers listeners (the Pound socket counts the control
// socket as 0), so lbctl route -l accepts what lbctl list printed.
func TestRouteNumbering(t *testing.T) {
	cases := []struct {
		name, dialect, listener string
		status                  int
		sent                    string // the State index the Controller got
		index                   string // the number in the reply
		reason                  string
	}{
		{name: "pound: first listener is 1", dialect: "pound", listener: "1", status: 200, sent: "0", index: `"index": 1`},
		{name: "pound: second listener is 2", dialect: "pound", listener: "2", status: 200, sent: "1", index: `"index": 2`},
		{name: "pound: 0 is the control socket", dialect: "pound", listener: "0", status: 400, reason: "control socket"},
		{name: "pound: past the last", dialect: "pound", listener: "3", status: 404, reason: "listener 3 not found (listeners are numbered 1 to 2 here)"},
		{name: "pound: names pass as they are", dialect: "pound", listener: "main", status: 200, sent: "main", index: `"index": 1`},
		{name: "zproxy: first listener is 0", dialect: "zproxy", listener: "0", status: 200, sent: "0", index: `"index": 0`},
		{name: "zproxy: past the last", dialect: "zproxy", listener: "2", status: 404, reason: "listener 2 not found (listeners are numbered 0 to 1 here)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &explainingFake{fakeCtl: newFake()}
			rec := do(dialects(f)[tc.dialect], "POST", "/route", `{"method":"GET","url":"/","listener":"`+tc.listener+`"}`)
			if rec.Code != tc.status {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			if tc.status != 200 {
				if !strings.Contains(rec.Body.String(), tc.reason) {
					t.Errorf("body %s, want %q", rec.Body, tc.reason)
				}
				if len(f.got) != 0 {
					t.Errorf("the Controller was asked %v", f.got)
				}
				return
			}
			if len(f.got) != 1 || f.got[0].Listener != tc.sent {
				t.Errorf("Controller got %v, want listener %q", f.got, tc.sent)
			}
			if !strings.Contains(rec.Body.String(), tc.index) {
				t.Errorf("reply %s lacks %s", rec.Body, tc.index)
			}
		})
	}
}
