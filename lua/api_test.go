//go:build lua

package lua

import (
	"strings"
	"testing"

	"lbd/rules"
)

// readers returns a field of the request, as a string, for the match
// tests: each function below tests one part of the API.
const readers = `
function resp() return http.resp end
function get(expr) return load("return " .. expr)() end
function is(expr, want) return tostring(load("return " .. expr)()) == want end
function typeis(expr, want) return type(load("return " .. expr)()) == want end
function check(expr, want)
   local got = tostring(load("return " .. expr)())
   if got ~= want then error(expr .. " is " .. got .. ", not " .. want, 0) end
end
`

func TestReadRequest(t *testing.T) {
	f := newFixture(t, setup{
		thread: map[string]string{"r.lua": readers},
		funcs:  []string{"is", "typeis"},
		consts: map[string]string{"k": "v1"},
	})
	st := request(t, "GET /a/b?x=1&y=two&z", "Host: example.org:8080", "X-Rep: one", "Accept: */*", "x-rep: two")
	cases := []struct{ name, expr, want string }{
		{"method", "http.req.method", "GET"},
		{"url", "http.req.url", "/a/b?x=1&y=two&z"},
		{"path", "http.req.path", "/a/b"},
		{"line", "http.req.line", "GET /a/b?x=1&y=two&z HTTP/1.1"},
		{"version as string", "tostring(http.req.version)", "1.1"},
		{"version minor", "http.req.version.minor", "1"},
		{"version major", "http.req.version.major", "1"},
		{"query as string", "tostring(http.req.query)", "x=1&y=two&z"},
		{"query parameter", "http.req.query.y", "two"},
		{"query parameter by index", "http.req.query['x']", "1"},
		{"absent query parameter", "http.req.query.nope", "nil"},
		{"parameter count", "#http.req.query", "3"},
		{"header", "http.req.headers['host']", "example.org:8080"},
		{"header, any case", "http.req.headers.HOST", "example.org:8080"},
		{"absent header", "http.req.headers['x-none']", "nil"},
		{"repeated header, first at 0", "http.req.headers['X-Rep'][0]", "one"},
		{"repeated header, second at 1", "http.req.headers['X-Rep'][1]", "two"},
		{"header count", "#http.req.headers", "4"},
		{"headers as string", "tostring(http.req.headers)", "Host: example.org:8080\nX-Rep: one\nAccept: */*\nx-rep: two\n"},
		{"number key", "http.req.headers[1]", "nil"},
		{"peer address", "http.rmt_ip", "192.0.2.7"},
		{"originator without TrustedIP", "http.fwd_ip", "192.0.2.7"},
		{"constant", "http:const('k')", "v1"},
		{"constant, plain call", "http.const('k')", "v1"},
		{"absent constant", "http:const('none')", "nil"},
		{"balancer before a backend", "http.balancer", "0"},
		{"no body without ContentCapture", "http.req.body", "nil"},
		{"pairs", "(function() local s = '' for k, v in pairs(http.req.headers) do s = s .. k .. '=' .. v .. ';' end return s end)()",
			"Host=example.org:8080;X-Rep=one;Accept=*/*;x-rep=two;"},
		{"loadctx after loading", "pound.loadctx", "nil"},
		{"version is Lua 5.4", "_VERSION", "Lua 5.4"},
		{"integer division", "7 // 2", "3"},
		{"bitwise", "6 & 3", "2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !f.mustCall(t, st, rules.ScriptMatch, "is", tc.expr, tc.want) {
				_, _ = f.call(t, st, rules.ScriptMatch, "typeis", tc.expr, "string")
				t.Errorf("%s is not %q", tc.expr, tc.want)
			}
		})
	}
}

func TestForwardedIP(t *testing.T) {
	f := newFixture(t, setup{thread: map[string]string{"r.lua": readers}, funcs: []string{"is"}, trusted: []string{"192.0.2.0/24"}})
	st := request(t, "GET /", "X-Forwarded-For: 203.0.113.9, 192.0.2.50")
	if !f.mustCall(t, st, rules.ScriptMatch, "is", "http.fwd_ip", "203.0.113.9") {
		t.Error("http.fwd_ip does not skip the trusted proxy")
	}
}

// TestRequestOnly checks that what belongs to responses is not there in
// LuaMatch and LuaModify on a request, as in Pound, and that the error
// says where the script asked.
func TestRequestOnly(t *testing.T) {
	f := newFixture(t, setup{thread: map[string]string{"r.lua": readers}, funcs: []string{"get", "resp"}})
	for _, expr := range []string{"http.resp", "http.service", "http.resend", "http.resendcount", "http.nothing", "http.req.nothing"} {
		t.Run(expr, func(t *testing.T) {
			_, err := f.call(t, request(t, "GET /"), rules.ScriptMatch, "get", expr)
			if err == nil || !strings.Contains(err.Error(), "no such field") {
				t.Fatalf("reading %s: %v, want no such field", expr, err)
			}
			if !strings.Contains(err.Error(), `[string "return `+expr+`"]:1:`) {
				t.Errorf("error %q does not say where", err)
			}
		})
	}
	_, err := f.call(t, request(t, "GET /"), rules.ScriptRequest, "resp")
	if err == nil || !strings.Contains(err.Error(), "r.lua:2: resp: no such field") {
		t.Errorf("http.resp in a request modification: %v, want r.lua:2: resp: no such field", err)
	}
}

const editors = `
function run(code) load(code)() end
`

func TestModifyRequest(t *testing.T) {
	cases := []struct {
		name, code   string
		url, headers string
	}{
		{"path keeps the query", "http.req.path = '/new'", "/new?q=1", "Host: h\n"},
		{"url", "http.req.url = '/u?v=2'", "/u?v=2", "Host: h\n"},
		{"query", "http.req.query = 'a=b'", "/old?a=b", "Host: h\n"},
		{"query removed", "http.req.query = nil", "/old", "Host: h\n"},
		{"parameter replaced", "http.req.query.q = 'z'", "/old?q=z", "Host: h\n"},
		{"parameter added", "http.req.query.n = 5", "/old?q=1&n=5", "Host: h\n"},
		{"parameter removed", "http.req.query.q = nil", "/old", "Host: h\n"},
		{"header replaced in place", "http.req.headers.host = 'other'", "/old?q=1", "host: other\n"},
		{"header added", "http.req.headers['X-New'] = 'yes'", "/old?q=1", "Host: h\nX-New: yes\n"},
		{"number value", "http.req.headers['X-N'] = 42", "/old?q=1", "Host: h\nX-N: 42\n"},
		{"header removed", "http.req.headers.host = nil", "/old?q=1", ""},
		{"repeated header from a table", "http.req.headers['X-M'] = {'a', 'b'}", "/old?q=1", "Host: h\nX-M: a\nX-M: b\n"},
		{"all headers", "http.req.headers = {['A'] = '1'}", "/old?q=1", "A: 1\n"},
		{"no headers", "http.req.headers = nil", "/old?q=1", ""},
	}
	f := newFixture(t, setup{thread: map[string]string{"e.lua": editors}, funcs: []string{"run"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := request(t, "GET /old?q=1", "Host: h")
			f.mustCall(t, st, rules.ScriptRequest, "run", tc.code)
			if string(st.Req.URL) != tc.url {
				t.Errorf("URL %q, want %q", st.Req.URL, tc.url)
			}
			if got := lines(&st.Req); got != tc.headers {
				t.Errorf("headers %q, want %q", got, tc.headers)
			}
		})
	}
}

// TestModifyRefused checks that values that would break the request or
// the response are Lua errors, not bytes on the wire. (A table is applied
// entry by entry, so one refused there leaves the request half changed;
// the call fails and the request is answered 500 all the same.)
func TestModifyRefused(t *testing.T) {
	cases := []struct{ name, code, want string }{
		{"CR LF in a header", "http.req.headers['X'] = 'a\\r\\nEvil: 1'", "invalid character"},
		{"bad header name", "http.req.headers['A B'] = 'x'", "invalid header name"},
		{"blank in a path", "http.req.path = '/a b'", "invalid"},
		{"empty URL", "http.req.url = ''", "invalid"},
		{"function as a path", "http.req.path = print", "a string is expected"},
		{"read-only method", "http.req.method = 'PUT'", "read-only"},
		{"read-only line", "http.req.line = 'x'", "read-only"},
		{"headers as a string", "http.req.headers = 'x'", "a table is expected"},
		{"table as a parameter", "http.req.query.x = {}", "must be a string"},
		{"pound is read-only", "pound.x = 1", "read-only"},
		{"resend on a request", "http.resend = true", "only be set in Rewrite response"},
	}
	f := newFixture(t, setup{thread: map[string]string{"e.lua": editors}, funcs: []string{"run"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := request(t, "GET /old", "Host: h")
			_, err := f.call(t, st, rules.ScriptRequest, "run", tc.code)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if string(st.Req.URL) != "/old" || lines(&st.Req) != "Host: h\n" {
				t.Errorf("the request changed: %q %q", st.Req.URL, lines(&st.Req))
			}
		})
	}
}

func TestResponse(t *testing.T) {
	f := newFixture(t, setup{thread: map[string]string{"e.lua": editors + readers}, funcs: []string{"run", "check"}})
	cases := []struct {
		name, code             string
		status                 int
		reason, headers, body  string
		defaultReason, bodySet bool
	}{
		{name: "nothing", code: "", status: 404, reason: "Not There", headers: "Server: b\n"},
		{name: "code gives its reason", code: "http.resp.code = 200", status: 200, defaultReason: true, headers: "Server: b\n"},
		{name: "code as a string", code: "http.resp.code = '503'", status: 503, defaultReason: true, headers: "Server: b\n"},
		{name: "reason after code", code: "http.resp.code = 299 http.resp.reason = 'Fine'", status: 299, reason: "Fine", headers: "Server: b\n"},
		{name: "reason reset", code: "http.resp.reason = nil", status: 404, defaultReason: true, headers: "Server: b\n"},
		{name: "headers", code: "http.resp.headers['Set-Cookie'] = {'a=1', 'b=2'}", status: 404, reason: "Not There",
			headers: "Server: b\nSet-Cookie: a=1\nSet-Cookie: b=2\n"},
		{name: "all headers", code: "http.resp.headers = {X = 'y'}", status: 404, reason: "Not There", headers: "X: y\n"},
		{name: "body", code: "http.resp.body = 'new'", status: 404, reason: "Not There", headers: "Server: b\n", body: "new", bodySet: true},
		{name: "empty body", code: "http.resp.body = nil", status: 404, reason: "Not There", headers: "Server: b\n", bodySet: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := request(t, "GET /")
			st.X.Status, st.X.Reason = 404, []byte("Not There")
			st.Resp.Lines = [][]byte{[]byte("Server: b")}
			f.mustCall(t, st, rules.ScriptResponse, "run", tc.code)
			x := &st.X
			if x.Status != tc.status || x.DefaultReason != tc.defaultReason || !tc.defaultReason && string(x.Reason) != tc.reason {
				t.Errorf("status %d %q (default %v), want %d %q (default %v)", x.Status, x.Reason, x.DefaultReason, tc.status, tc.reason, tc.defaultReason)
			}
			if got := lines(&st.Resp); got != tc.headers {
				t.Errorf("headers %q, want %q", got, tc.headers)
			}
			if x.BodySet != tc.bodySet || string(x.RespBody) != tc.body {
				t.Errorf("body %q (set %v), want %q (set %v)", x.RespBody, x.BodySet, tc.body, tc.bodySet)
			}
		})
	}
	t.Run("refused codes", func(t *testing.T) {
		st := request(t, "GET /")
		for _, code := range []string{"99", "600", "'20x'", "200.5", "'2000'"} {
			_, err := f.call(t, st, rules.ScriptResponse, "run", "http.resp.code = "+code)
			if err == nil || !strings.Contains(err.Error(), "is not a status") {
				t.Errorf("code %s: %v", code, err)
			}
		}
	})
	t.Run("table entries", func(t *testing.T) {
		st := request(t, "GET /")
		for code, want := range map[string]string{
			"http.req.headers = {['A:'] = 'x'}": "invalid header name",
			"http.req.headers = {A = {}}":       "must be a string",
			"http.resp.headers.X = {{}}":        "must be a string",
		} {
			_, err := f.call(t, st, rules.ScriptResponse, "run", code)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", code, err, want)
			}
		}
	})
	t.Run("reads", func(t *testing.T) {
		st := request(t, "GET /")
		st.X.Status, st.X.Reason = 301, []byte("Moved")
		st.Resp.Lines = [][]byte{[]byte("Location: /x")}
		for expr, want := range map[string]string{"http.resp.code": "301", "http.resp.reason": "Moved",
			"http.resp.headers.location": "/x", "http.resp.body": "nil", "http.resendcount": "0", "http.resend": "false"} {
			f.mustCall(t, st, rules.ScriptResponse, "check", expr, want)
		}
	})
}
