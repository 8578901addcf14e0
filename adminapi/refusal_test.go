package adminapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// doJSON is do with Accept: application/json, as lbctl sends it.
func doJSON(h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// reloadErr is a refused reload as config.Load reports it: every error
// of the file, joined.
var reloadErr = errors.Join(
	errors.New(`/etc/lbd/lbd.cfg:4.9-14: unrecognized keyword "Adress"; did you mean "Address"?`),
	errors.New(`/etc/lbd/lbd.cfg:9.15-31: invalid Redis address "127.0.0.1:99999": port "99999" is not a number from 1 to 65535`))

// refusalCase is one refused request; the replies of all of them, with
// their status, are the golden file of the dialect.
type refusalCase struct {
	name, method, path, body string
	ctlErr                   error
}

var poundRefusals = []refusalCase{
	{name: "unknown endpoint", method: "GET", path: "/nope"},
	{name: "method not allowed", method: "POST", path: "/listener/1"},
	{name: "bad indent", method: "GET", path: "/core?indent=81"},
	{name: "unknown listener", method: "GET", path: "/listener/9"},
	{name: "unknown service", method: "GET", path: "/listener/1/nope"},
	{name: "unknown backend", method: "DELETE", path: "/listener/1/0/7"},
	{name: "below a backend", method: "GET", path: "/listener/1/0/0/x"},
	{name: "disable needs an object", method: "DELETE", path: "/listener"},
	{name: "whole listing cannot be disabled", method: "DELETE", path: "/listener/"},
	{name: "control socket", method: "DELETE", path: "/listener/0"},
	{name: "session needs a backend", method: "PUT", path: "/session/1/0?key=x"},
	{name: "session needs a key", method: "PUT", path: "/session/1/0/1"},
	{name: "session on a listener", method: "PUT", path: "/session/1?key=k"},
	{name: "session delete on a backend", method: "DELETE", path: "/session/1/0/0?key=abc"},
	{name: "session without sessions", method: "PUT", path: "/session/1/0/1?key=x",
		ctlErr: fmt.Errorf("service has no sessions: %w", ErrInvalid)},
	{name: "log level missing", method: "PUT", path: "/log/1"},
	{name: "log level unknown", method: "PUT", path: "/log?level=bogus",
		ctlErr: fmt.Errorf(`unknown log format "bogus": %w`, ErrInvalid)},
	{name: "log path too deep", method: "GET", path: "/log/1/0"},
	{name: "log of unknown listener", method: "GET", path: "/log/7"},
	{name: "controller conflict", method: "DELETE", path: "/listener/1",
		ctlErr: fmt.Errorf("listener 0 changed meanwhile: %w", ErrConflict)},
	{name: "controller failure", method: "DELETE", path: "/listener/1", ctlErr: errors.New("boom")},
	{name: "reload refused", method: "PATCH", path: "/config", ctlErr: reloadErr},
	{name: "not a cluster member", method: "GET", path: "/cluster"},
	{name: "patch of a service", method: "PATCH", path: "/listener/1/0?weight=1"},
	{name: "patch with a typo", method: "PATCH", path: "/listener/1/0/0?wieght=1"},
}

var zproxyRefusals = []refusalCase{
	{name: "unknown endpoint", method: "GET", path: "/nope"},
	{name: "method not allowed", method: "POST", path: "/listeners"},
	{name: "unknown listener", method: "GET", path: "/listener/9"},
	{name: "flush command", method: "DELETE", path: webSvc + "/sessions", body: `{}`},
	{name: "not a cluster member", method: "GET", path: "/cluster"},
	{name: "reload refused", method: "PATCH", path: "/config", ctlErr: reloadErr},
	{name: "add session without sessions", method: "PUT", path: webSvc + "/sessions",
		body: `{"id":"k","backend-id":"127.0.0.1-8081"}`, ctlErr: fmt.Errorf("service has no sessions: %w", ErrInvalid)},
}

// TestRefusalReasons: to a client that accepts JSON every refusal says
// why, in zproxy's result shape; the replies are compared with
// testdata/refusals_DIALECT.txt (-update rewrites them).
func TestRefusalReasons(t *testing.T) {
	for _, d := range []struct {
		name  string
		h     func(Controller) http.Handler
		cases []refusalCase
	}{
		{"pound", NewPoundHandler, poundRefusals},
		{"zproxy", NewZproxyHandler, zproxyRefusals},
	} {
		t.Run(d.name, func(t *testing.T) {
			var out bytes.Buffer
			for _, tc := range d.cases {
				ctl := newFake()
				ctl.err = tc.ctlErr
				rec := doJSON(d.h(ctl), tc.method, tc.path, tc.body)
				body := strings.TrimSuffix(rec.Body.String(), "\n")
				fmt.Fprintf(&out, "%s: %s %s -> %d %s\n", tc.name, tc.method, tc.path, rec.Code, body)
				if rec.Code < 400 || !strings.Contains(body, `"reason":`) || rec.Header().Get("Content-Type") != "application/json" {
					t.Errorf("%s: %d %q is not a refusal with a reason", tc.name, rec.Code, body)
				}
			}
			checkGolden(t, "refusals_"+d.name+".txt", out.Bytes())
		})
	}
}

// TestRefusalDefaults: without Accept: application/json, the products'
// own clients get what they always got (Pound's page, zproxy's bare
// 400) even where lbd knows the reason.
func TestRefusalDefaults(t *testing.T) {
	rec := do(NewPoundHandler(newFake()), "GET", "/listener/9", "")
	if rec.Code != 404 || !strings.HasPrefix(rec.Body.String(), poundPage(404)) {
		t.Errorf("Pound: %d %s", rec.Code, rec.Body)
	}
	rec = do(NewZproxyHandler(newFake()), "GET", "/nope", "")
	if rec.Code != 400 || rec.Body.Len() != 0 {
		t.Errorf("zproxy: %d %q", rec.Code, rec.Body)
	}
}

func TestWantsJSON(t *testing.T) {
	tests := []struct {
		name   string
		accept []string
		want   bool
	}{
		{name: "none"},
		{name: "any", accept: []string{"*/*"}},
		{name: "html", accept: []string{"text/html"}},
		{name: "json", accept: []string{"application/json"}, want: true},
		{name: "json with a quality among others", accept: []string{"text/html, application/json;q=0.9"}, want: true},
		{name: "application wildcard", accept: []string{"application/*"}, want: true},
		{name: "second header", accept: []string{"text/plain", "application/json"}, want: true},
		{name: "malformed", accept: []string{"application/json;;;="}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			for _, a := range tc.accept {
				r.Header.Add("Accept", a)
			}
			if got := wantsJSON(r); got != tc.want {
				t.Errorf("wantsJSON(%q) = %v, want %v", tc.accept, got, tc.want)
			}
		})
	}
}
