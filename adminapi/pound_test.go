package adminapi

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// poundPage returns the start of Pound's error page for status.
func poundPage(status int) string {
	return `<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN"><html><head><title>` +
		strconv.Itoa(status) + " " + poundErrorText[status][0] + `</title>`
}

// poundCase is one row of TestPoundRequests.
type poundCase struct {
	name, method, path string
	ctlErr             error
	status             int
	body               string // exact JSON reply; "" checks Pound's error page
	calls              []string
}

// poundCases are the requests of TestPoundRequests.
var poundCases = []poundCase{
	{name: "disable backend", method: "DELETE", path: "/listener/1/0/1", status: 200, body: "true",
		calls: []string{"SetEnabled {0 0 1} false"}},
	{name: "enable listener by name", method: "PUT", path: "/listener/main", status: 200, body: "true",
		calls: []string{"SetEnabled {0 -1 -1} true"}},
	{name: "disable service by name", method: "DELETE", path: "/listener/main/web", status: 200, body: "true",
		calls: []string{"SetEnabled {0 0 -1} false"}},
	{name: "disable global service", method: "DELETE", path: "/service/0", status: 200, body: "true",
		calls: []string{"SetEnabled {-1 0 -1} false"}},
	{name: "enable global backend via dash", method: "PUT", path: "/listener/-/0/0", status: 200, body: "true",
		calls: []string{"SetEnabled {-1 0 0} true"}},
	{name: "indented true", method: "PUT", path: "/listener/2?indent=4", status: 200, body: "true",
		calls: []string{"SetEnabled {1 -1 -1} true"}},
	{name: "control listener cannot be disabled", method: "DELETE", path: "/listener/0", status: 400},
	{name: "control backend cannot be disabled", method: "DELETE", path: "/listener/0/0/0", status: 400},
	{name: "whole listing cannot be disabled", method: "DELETE", path: "/listener/", status: 400},
	{name: "disable needs an object path", method: "DELETE", path: "/listener", status: 404},
	{name: "global service needs an index", method: "PUT", path: "/service", status: 404},
	{name: "unknown listener", method: "DELETE", path: "/listener/9", status: 404},
	{name: "unknown listener name", method: "GET", path: "/listener/nope", status: 404},
	{name: "unknown backend", method: "DELETE", path: "/listener/1/0/7", status: 404},
	{name: "backends have no names", method: "GET", path: "/listener/1/0/x", status: 404},
	{name: "negative index", method: "GET", path: "/listener/-1", status: 404},
	{name: "path below a backend", method: "GET", path: "/listener/1/0/0/x", status: 404},
	{name: "trailing slash after an object", method: "GET", path: "/listener/1/", status: 404},
	{name: "core below root", method: "GET", path: "/core/x", status: 404},
	{name: "indent too large", method: "GET", path: "/core?indent=81", status: 400},
	{name: "indent not a number", method: "GET", path: "/?indent=x", status: 400},
	{name: "bad indent refused before the change", method: "DELETE", path: "/listener/1?indent=-1", status: 400},
	{name: "POST on an endpoint", method: "POST", path: "/listener/1", status: 405},
	{name: "PATCH on core", method: "PATCH", path: "/core", status: 405},
	{name: "PUT on root", method: "PUT", path: "/", status: 405},
	{name: "GET on a mutation-only endpoint", method: "GET", path: "/session/1/0", status: 404},
	{name: "unknown GET path", method: "GET", path: "/nope", status: 404},
	{name: "unknown PUT path", method: "PUT", path: "/nope", status: 405},
	{name: "prefix is not an endpoint", method: "GET", path: "/listenerx", status: 404},
	{name: "add session", method: "PUT", path: "/session/1/0/1?key=xyz", status: 200,
		body:  `{"backends":[` + webBackendsJSON + `], "enabled":true, "kind":"service", "name":"web", "session_type":"COOKIE", "sessions":[{"backend":0, "expire":"2026-11-30T05:44:00.000000", "key":"abc"}, {"backend":1, "expire":"2026-11-30T05:45:00.000000", "key":"static"}, {"backend":1, "expire":"2026-11-30T05:45:00.000000", "key":"xyz"}]}`,
		calls: []string{"AddSession {0 0 -1} {xyz 1 0001-01-01T00:00:00Z false}"}},
	{name: "add session with encoded key", method: "PUT", path: "/session/main/web/0?key=a%20b", status: 200,
		calls: []string{"AddSession {0 0 -1} {a b 0 0001-01-01T00:00:00Z false}"}},
	{name: "add session needs a backend", method: "PUT", path: "/session/1/0?key=x", status: 400},
	{name: "add session needs a key", method: "PUT", path: "/session/1/0/1", status: 400},
	{name: "add session key too long", method: "PUT", path: "/session/1/0/1?key=" + strings.Repeat("k", 128), status: 400},
	{name: "add session on control socket", method: "PUT", path: "/session/0/0/0?key=k", status: 400},
	{name: "add session on a listener", method: "PUT", path: "/session/1?key=k", status: 400},
	{name: "delete session", method: "DELETE", path: "/session/1/0?key=abc", status: 200,
		body:  `{"backends":[` + webBackendsJSON + `], "enabled":true, "kind":"service", "name":"web", "session_type":"COOKIE", "sessions":[{"backend":1, "expire":"2026-11-30T05:45:00.000000", "key":"static"}]}`,
		calls: []string{"DeleteSession {0 0 -1} abc"}},
	{name: "delete missing session is not an error", method: "DELETE", path: "/session/1/0?key=nope", status: 200,
		calls: []string{"DeleteSession {0 0 -1} nope"}},
	{name: "delete session on a backend path", method: "DELETE", path: "/session/1/0/0?key=abc", status: 400},
	{name: "delete session needs a key", method: "DELETE", path: "/session/1/0", status: 400},
	{name: "set global log", method: "PUT", path: "/log/?level=combined", status: 200,
		body: `{"global":"combined", "kind":"log", "level":"combined"}`, calls: []string{`SetLogLevel -1 "combined"`}},
	{name: "set listener log by index", method: "PUT", path: "/log/1?level=2", status: 200,
		body: `{"global":"regular", "kind":"log", "level":"extended", "listener_index":1}`, calls: []string{`SetLogLevel 0 "2"`}},
	{name: "unknown log format", method: "PUT", path: "/log?level=bogus", status: 400, calls: []string{`SetLogLevel -1 "bogus"`}},
	{name: "log level missing", method: "PUT", path: "/log/1", status: 400},
	{name: "clear listener log", method: "DELETE", path: "/log/main", status: 200,
		body: `{"global":"regular", "kind":"log", "level":null, "listener_name":"main"}`, calls: []string{`SetLogLevel 0 ""`}},
	{name: "clear global log", method: "DELETE", path: "/log", status: 200,
		body: `{"global":"null", "kind":"log", "level":null}`, calls: []string{`SetLogLevel -1 "null"`}},
	{name: "log of the control socket is fixed", method: "PUT", path: "/log/0?level=regular", status: 400},
	{name: "log for unknown listener", method: "GET", path: "/log/7", status: 404},
	{name: "log path too deep", method: "GET", path: "/log/1/0", status: 400},
	{name: "controller not found", method: "DELETE", path: "/listener/1", ctlErr: ErrNotFound, status: 404,
		calls: []string{"SetEnabled {0 -1 -1} false"}},
	{name: "controller conflict", method: "DELETE", path: "/listener/1", ctlErr: ErrConflict, status: 409,
		calls: []string{"SetEnabled {0 -1 -1} false"}},
	{name: "controller failure", method: "DELETE", path: "/listener/1", ctlErr: errors.New("boom"), status: 500,
		calls: []string{"SetEnabled {0 -1 -1} false"}},
}

func TestPoundRequests(t *testing.T) {
	for _, tc := range poundCases {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newFake()
			ctl.err = tc.ctlErr
			rec := do(NewPoundHandler(ctl), tc.method, tc.path, "")
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			switch {
			case tc.status != 200:
				if !strings.HasPrefix(rec.Body.String(), poundPage(tc.status)) {
					t.Errorf("body is not Pound's %d page: %s", tc.status, rec.Body)
				}
				if ct := rec.Header().Get("Content-Type"); ct != "text/html" {
					t.Errorf("Content-Type %q", ct)
				}
			case tc.body != "" && rec.Body.String() != tc.body:
				t.Errorf("body\n got: %s\nwant: %s", rec.Body, tc.body)
			}
			if got := ctl.log(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			if rec.Header().Get("Connection") != "close" {
				t.Errorf("no Connection: close")
			}
		})
	}
}

// webBackendsJSON is the compact Pound form of the fixture's web backends.
const webBackendsJSON = `{"address":"127.0.0.1:8081", "alive":true, "conn_to":15, "enabled":true, "io_to":15, "kind":"backend", "priority":5, "protocol":"http", "servername":null, "type":"backend", "weight":0, "ws_to":600}, ` +
	`{"address":"127.0.0.1:8082", "alive":false, "conn_to":15, "enabled":true, "io_to":15, "kind":"backend", "priority":5, "protocol":"https", "servername":"backend.example", "type":"backend", "weight":0, "ws_to":600}, ` +
	`{"address":"127.0.0.1:8083", "alive":true, "conn_to":120, "enabled":true, "io_to":120, "kind":"backend", "priority":1, "protocol":"http", "servername":null, "type":"backend", "weight":65535, "ws_to":120}`

// TestPoundSnapshotsAreNotModified checks that a change made through the
// API shows in the next listing but not in a snapshot taken before it.
func TestPoundSnapshotsAreNotModified(t *testing.T) {
	ctl := newFake()
	h := NewPoundHandler(ctl)
	before := ctl.State()
	if rec := do(h, "DELETE", "/listener/1/0/0", ""); rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	if !before.Listeners[0].Services[0].Backends[0].Enabled {
		t.Errorf("the earlier snapshot was modified")
	}
	rec := do(h, "GET", "/listener/1/0/0", "")
	if !strings.Contains(rec.Body.String(), `"enabled":false`) {
		t.Errorf("listing does not show the change: %s", rec.Body)
	}
}
