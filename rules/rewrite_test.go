package rules

import (
	"errors"
	"strings"
	"testing"
)

func TestRewrite(t *testing.T) {
	cases := []struct {
		name             string
		global, listener string
		service          string
		line             string
		headers          []string
		wantURL          string
		wantHeaders      string
	}{
		{name: "set url", service: `SetURL "/new?x=1"`, line: "GET /old", wantURL: "/new?x=1"},
		{name: "set path keeps the query", service: `SetPath "/p"`, line: "GET /old?q=1", wantURL: "/p?q=1"},
		{name: "set path -encode keeps slashes", service: `SetPath -encode "/a b/c&d"`, line: "GET /", wantURL: "/a%20b/c%26d"},
		{name: "set query", service: `SetQuery "a=1&b=2"`, line: "GET /p?z", wantURL: "/p?a=1&b=2"},
		{name: "delete query", service: `DeleteQuery`, line: "GET /p?z=1", wantURL: "/p"},
		{name: "set query param replaces in place", service: `SetQueryParam "b" "9"`, line: "GET /p?a=1&b=2&c=3", wantURL: "/p?a=1&b=9&c=3"},
		{name: "set query param appends", service: `SetQueryParam "n" -encode "x y"`, line: "GET /p?a=1", wantURL: "/p?a=1&n=x%20y"},
		{name: "set query param to a query-less url", service: `SetQueryParam "n" "1"`, line: "GET /p", wantURL: "/p?n=1"},
		{name: "set query param without value deletes", service: `SetQueryParam "b"`, line: "GET /p?a=1&b=2", wantURL: "/p?a=1"},
		{name: "set header replaces the first of its name", service: `SetHeader "x-a: new"`, line: "GET /",
			headers: []string{"X-A: 1", "X-A: 2"}, wantHeaders: "x-a: new|X-A: 2|"},
		{name: "set header appends", service: `SetHeader "X-B: 1"`, line: "GET /", headers: []string{"X-A: 1"}, wantHeaders: "X-A: 1|X-B: 1|"},
		{name: "delete header removes every match", service: `DeleteHeader "^X-A:"`, line: "GET /",
			headers: []string{"X-A: 1", "Host: h", "x-a: 2"}, wantHeaders: "Host: h|"},
		{name: "delete header by field name keeps longer names", service: `DeleteHeader "^Cookie:"`, line: "GET /",
			headers: []string{"cookie: a", "Cookies: b", "COOKIE: c", "Set-Cookie: d"}, wantHeaders: "Cookies: b|Set-Cookie: d|"},
		{name: "set header with an expanded value replaces by name", service: `SetHeader "x-a: %[path]"`, line: "GET /p",
			headers: []string{"Host: h", "X-A: 1"}, wantHeaders: "Host: h|x-a: /p|"},
		{name: "statement order: set then delete", service: "SetHeader \"X-A: 1\"\nDeleteHeader \"X-A\"", line: "GET /", wantHeaders: ""},
		{name: "back-references across matches", service: "Host -tag \"h\" -re \"^(www\\\\.)?(.+)$\"\nPath \"^/(.*)$\"\nSetHeader \"X: $1 $2(1) $2(h) ${1}0\"",
			line: "GET /p", headers: []string{"Host: www.example.org"}, wantHeaders: "Host: www.example.org|X: p example.org example.org p0|"},
		{name: "accessors", service: `SetHeader "X: %[url]|%[path]|%[query]|%[param a]|%[header Host]|%[host]|%[port]|%[remoteip 0]|$$|$%"`,
			line: "GET /p?a=1", headers: []string{"Host: h:8080"}, wantHeaders: "Host: h:8080|X: /p?a=1|/p|a=1|1|h:8080|h|:8080|127.0.0.1|$|%|"},
		{name: "user accessor", service: `SetHeader "X-User: %[user]"`, line: "GET /",
			headers: []string{"Authorization: Basic dXNlcjpwYXNz"}, wantHeaders: "Authorization: Basic dXNlcjpwYXNz|X-User: user|"},
		{name: "unknown accessor is kept as written", service: `SetHeader "X: %[nope]"`, line: "GET /", wantHeaders: "X: %[nope]|"},
		{name: "constants: the service shadows the listener and the top level",
			global: `Constant "a" "g"` + "\n" + `Constant "b" "g b"`, listener: ` Constant "a" "l"`,
			service: "Constant \"a\" \"s\"\nSetHeader \"X: %[const a] %[const b] %[const b url] %[const a base64] %[const none]\"",
			line:    "GET /", wantHeaders: "X: s g b g%20b cw== |"},
		{name: "rewrite else chain", service: "Rewrite\n Path \"^/a\"\n SetHeader \"X: a\"\nElse\n Path \"^/b\"\n SetHeader \"X: b\"\nElse\n SetHeader \"X: other\"\nEnd",
			line: "GET /b", wantHeaders: "X: b|"},
		{name: "later conditions see earlier changes", service: "SetPath \"/changed\"\nRewrite\n Path \"^/changed$\"\n SetHeader \"X: seen\"\nEnd",
			line: "GET /orig", wantURL: "/changed", wantHeaders: "X: seen|"},
		{name: "listener rules run first", listener: ` SetHeader "X: listener"`, service: `SetHeader "Y: %[header X]"`,
			line: "GET /", wantHeaders: "X: listener|Y: listener|"},
	}
	var st State
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := compileFirst(t, wrap(tc.global, tc.listener, tc.service))
			request(&st, p.env, "127.0.0.1", tc.line, tc.headers...)
			if ok, err := p.sel.Select(&st); err != nil || !ok {
				t.Fatalf("Select = %v, %v", ok, err)
			}
			if err := p.lreq.Rewrite(&st, &st.Req); err != nil {
				t.Fatal(err)
			}
			if err := p.req.Rewrite(&st, &st.Req); err != nil {
				t.Fatalf("%v\n%v", err, p.req.Listing())
			}
			if tc.wantURL != "" && string(st.Req.URL) != tc.wantURL {
				t.Errorf("URL %q, want %q", st.Req.URL, tc.wantURL)
			}
			if tc.wantHeaders != "" || len(tc.headers) > 0 || strings.Contains(tc.service, "Header") {
				if got := lines(&st.Req); got != tc.wantHeaders {
					t.Errorf("headers %q, want %q", got, tc.wantHeaders)
				}
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	cases := []struct{ name, service, want string }{
		{name: "unclosed accessor", service: `SetPath "/echo%[url"`, want: `path "/echo%[url": unclosed %[ at offset 5`},
		{name: "group that did not match", service: `SetHeader "X: $1"`, want: `Header "X: $1" refers to non-existing group $1`},
		{name: "reference too far back", service: "Path \"(.*)\"\nSetURL \"$1(8)\"", want: `url "$1(8)" refers to non-existing group $1(8)`},
		{name: "missing parenthesis", service: "Path \"(.*)\"\nSetURL \"/$1(2/x\"", want: `url "/$1(2/x": missing closing parenthesis in reference started at offset 2`},
		{name: "missing brace", service: "Path \"(.*)\"\nSetURL \"${1\"", want: `url "${1": missing closing brace in reference started at offset 1`},
		{name: "unknown tag", service: "Path \"(.*)\"\nSetURL \"$1(nope)\"", want: `url "$1(nope)" refers to non-existing group $1(nope)`},
		{name: "lone dollar", service: `SetQuery "a=$x"`, want: `query "a=$x": unescaped % character at offset 3`},
	}
	var st State
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := compileFirst(t, wrap("", "", tc.service))
			request(&st, p.env, "127.0.0.1", "GET /x")
			if _, err := p.sel.Select(&st); err != nil {
				t.Fatal(err)
			}
			err := p.req.Rewrite(&st, &st.Req)
			var xe *ExpandError
			if !errors.As(err, &xe) {
				t.Fatalf("error %v, want an *ExpandError", err)
			}
			if err.Error() != tc.want {
				t.Fatalf("error\n %s\nwant\n %s", err, tc.want)
			}
		})
	}
}

func TestResponseRules(t *testing.T) {
	p := compileFirst(t, wrap("", "", "Rewrite response\n Header \"Content-Type: text/(.*)\"\n SetHeader \"X-Sub: $1 for %[path]\"\nElse\n DeleteHeader \"^Server\"\nEnd"))
	var st State
	for _, tc := range []struct{ name, ctype, want string }{
		{"matching response", "Content-Type: text/html", "Content-Type: text/html|Server: s|X-Sub: html for /p|"},
		{"else branch", "Content-Type: image/png", "Content-Type: image/png|"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			request(&st, p.env, "127.0.0.1", "GET /p")
			st.Resp.Lines = append(st.Resp.Lines, []byte(tc.ctype), []byte("Server: s"))
			if err := p.rs.Rewrite(&st, &st.Resp); err != nil {
				t.Fatal(err)
			}
			if got := lines(&st.Resp); got != tc.want {
				t.Fatalf("response headers %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCombine(t *testing.T) {
	var st State
	st.Begin(st.Client, 0)
	st.Req.Lines = [][]byte{[]byte("X-L: a, ,b"), []byte("Host: h"), []byte("x-l:  \"q,1\" ,, c "), []byte("X-L: d")}
	st.Combine(&st.Req, []string{"X-L", "Accept"})
	if got := lines(&st.Req); got != `X-L: a, b, "q,1", c, d|Host: h|` {
		t.Fatalf("combined %q", got)
	}
	if !st.Req.HeadersChanged {
		t.Fatal("combining must mark the headers changed")
	}
}
