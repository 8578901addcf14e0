package session

import (
	"net/netip"
	"testing"
)

func TestRequestKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		typ     Type
		id      string
		target  string
		headers []string
		want    string // "" = nil: no key, no session
	}{
		{name: "none type has no key", typ: None, target: "/", headers: []string{"Cookie: sid=1"}},

		{name: "basic token", typ: Basic, target: "/", headers: []string{"Authorization: Basic dXNlcjpwYXNz"}, want: "dXNlcjpwYXNz"},
		{name: "basic scheme case-insensitive", typ: Basic, target: "/", headers: []string{"authorization: bAsIc \t tok"}, want: "tok"},
		{name: "basic token ends at space", typ: Basic, target: "/", headers: []string{"Authorization: Basic tok extra"}, want: "tok"},
		{name: "bearer is not basic", typ: Basic, target: "/", headers: []string{"Authorization: Bearer tok"}},
		{name: "basic without space", typ: Basic, target: "/", headers: []string{"Authorization: Basictok"}},
		{name: "basic without token", typ: Basic, target: "/", headers: []string{"Authorization: Basic"}},
		{name: "basic in second authorization", typ: Basic, target: "/", headers: []string{"Authorization: Bearer x", "Authorization: Basic t2"}, want: "t2"},
		{name: "basic missing", typ: Basic, target: "/", headers: []string{"Proxy-Authorization: Basic t"}},

		{name: "url param", typ: URL, id: "sid", target: "/a?sid=abc", want: "abc"},
		{name: "url similar name before", typ: URL, id: "sid", target: "/a?xsid=1&sid=2", want: "2"},
		{name: "url similar name only", typ: URL, id: "sid", target: "/a?xsid=1&sid2=3&ssid=4"},
		{name: "url name is case-sensitive", typ: URL, id: "sid", target: "/a?SID=1"},
		{name: "url encoded value kept raw", typ: URL, id: "sid", target: "/a?sid=x%26y%3D", want: "x%26y%3D"},
		{name: "url value with equals", typ: URL, id: "sid", target: "/a?sid=a=b", want: "a=b"},
		{name: "url value ends at semicolon", typ: URL, id: "sid", target: "/a?sid=a;b", want: "a"},
		{name: "url empty value then real", typ: URL, id: "sid", target: "/a?sid=&sid=b", want: "b"},
		{name: "url empty value", typ: URL, id: "sid", target: "/a?sid="},
		{name: "url name without value", typ: URL, id: "sid", target: "/a?sid&x=1"},
		{name: "url in path not query", typ: URL, id: "sid", target: "/sid=1"},
		{name: "url no query", typ: URL, id: "sid", target: "/a"},
		{name: "url empty id", typ: URL, target: "/a?=1"},
		{name: "url value of other param", typ: URL, id: "sid", target: "/a?q=sid=1"},

		{name: "parm", typ: Parm, target: "/app;jsessionid=42?x=1", want: "jsessionid=42"},
		{name: "parm keeps later semicolons", typ: Parm, target: "/a;x;y", want: "x;y"},
		{name: "parm absent", typ: Parm, target: "/a?x=;1"},
		{name: "parm empty", typ: Parm, target: "/a;"},

		{name: "cookie", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: sid=abc"}, want: "abc"},
		{name: "cookie after similar name", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: xsid=1; sid=2"}, want: "2"},
		{name: "cookie similar names only", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: xsid=1; sid2=2; SID=3"}},
		{name: "cookie name inside a value", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: foo=sid=1"}},
		{name: "cookie several in one header", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: a=1; b=2; sid=3; c=4"}, want: "3"},
		{name: "cookie in second header", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: a=1", "X: y", "cookie: sid=5"}, want: "5"},
		{name: "cookie first wins", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: sid=1; sid=2"}, want: "1"},
		{name: "cookie empty then real", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: sid=", "Cookie: sid=6"}, want: "6"},
		{name: "cookie no space and empty pairs", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: a=1;;sid=7"}, want: "7"},
		{name: "cookie whitespace around", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: a=1 ;  sid = 8 "}, want: "8"},
		{name: "cookie base64 value", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: sid=YWJj=="}, want: "YWJj=="},
		{name: "cookie quoted value raw", typ: Cookie, id: "sid", target: "/", headers: []string{`Cookie: sid="a%20b"`}, want: `"a%20b"`},
		{name: "cookie pair without equals", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie: sid; a=1"}},
		{name: "cookie2 header ignored", typ: Cookie, id: "sid", target: "/", headers: []string{"Cookie2: sid=1"}},
		{name: "cookie missing", typ: Cookie, id: "sid", target: "/?sid=1", headers: []string{"X-Sid: 1"}},

		{name: "header", typ: Header, id: "X-Session", target: "/", headers: []string{"x-session: abc"}, want: "abc"},
		{name: "header similar name", typ: Header, id: "X-Session", target: "/", headers: []string{"X-Session-Id: abc", "X-Sessio: d"}},
		{name: "header empty value then real", typ: Header, id: "X-Session", target: "/", headers: []string{"X-Session:", "X-Session: z"}, want: "z"},
		{name: "header missing", typ: Header, id: "X-Session", target: "/"},

		{name: "cookieinsert reads its cookie", typ: CookieInsert, id: "BCK", target: "/", headers: []string{"Cookie: xBCK=1; BCK=4-7f000001-46a10000"}, want: "4-7f000001-46a10000"},
		{name: "cookieinsert without id", typ: CookieInsert, target: "/", headers: []string{"Cookie: =1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest(tt.target, tt.headers...)
			e := Extractor{Type: tt.typ, ID: []byte(tt.id)}
			got := e.RequestKey(req, netip.MustParseAddr("192.0.2.1"), make([]byte, 0, MinScratch))
			if tt.want == "" {
				if got != nil {
					t.Fatalf("RequestKey = %q, want nil", got)
				}
				return
			}
			if string(got) != tt.want {
				t.Fatalf("RequestKey = %q, want %q", got, tt.want)
			}
			if !withinRequest(got, req) {
				t.Fatalf("RequestKey %q is a copy, want a slice of the request", got)
			}
		})
	}
}

func TestRequestKeyIP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ip   netip.Addr
		want string
	}{
		{name: "ipv4", ip: netip.MustParseAddr("10.1.2.3"), want: "10.1.2.3"},
		{name: "ipv6", ip: netip.MustParseAddr("2001:db8::1"), want: "2001:db8::1"},
		{name: "ipv4-mapped is ipv4", ip: netip.MustParseAddr("::ffff:10.1.2.3"), want: "10.1.2.3"},
		{name: "invalid address has no key", ip: netip.Addr{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scratch := make([]byte, 0, MinScratch)
			e := Extractor{Type: IP}
			got := e.RequestKey(newRequest("/", "Cookie: a=1"), tt.ip, scratch)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("RequestKey = %q, want nil", got)
				}
				return
			}
			if string(got) != tt.want || !within(got, scratch) {
				t.Fatalf("RequestKey = %q (in scratch: %v), want %q in scratch", got, within(got, scratch), tt.want)
			}
		})
	}
}

func TestResponseKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		typ     Type
		id      string
		headers []string
		want    string // "" = nil
	}{
		{name: "set-cookie", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: sid=abc; Path=/; HttpOnly"}, want: "abc"},
		{name: "set-cookie bare", typ: Cookie, id: "sid", headers: []string{"set-cookie: sid=abc"}, want: "abc"},
		{name: "set-cookie similar name", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: xsid=abc", "Set-Cookie: sid2=d"}},
		{name: "set-cookie second header", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: a=1", "Set-Cookie: sid=2; Secure"}, want: "2"},
		{name: "set-cookie attribute is not a cookie", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: a=1; sid=2"}},
		{name: "set-cookie base64 value", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: sid=YQ==; Path=/"}, want: "YQ=="},
		{name: "set-cookie deletion empty", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: sid=; Max-Age=0"}},
		{name: "set-cookie deletion max-age 0", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: sid=gone; Path=/; max-age=00"}},
		{name: "set-cookie deletion negative", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: sid=gone; Max-Age=-1"}},
		{name: "set-cookie positive max-age", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: sid=a; Max-Age=60"}, want: "a"},
		{name: "set-cookie malformed max-age ignored", typ: Cookie, id: "sid", headers: []string{"Set-Cookie: sid=a; Max-Age=-x"}, want: "a"},
		{name: "set-cookie not a request cookie header", typ: Cookie, id: "sid", headers: []string{"Cookie: sid=a"}},
		{name: "response header", typ: Header, id: "X-Session", headers: []string{"X-Other: 1", "X-SESSION: s1"}, want: "s1"},
		{name: "response header missing", typ: Header, id: "X-Session", headers: []string{"X-Session-Id: s1"}},
		{name: "ip learns nothing", typ: IP, id: "sid", headers: []string{"Set-Cookie: sid=a"}},
		{name: "url learns nothing", typ: URL, id: "sid", headers: []string{"Set-Cookie: sid=a", "sid: b"}},
		{name: "cookieinsert learns nothing", typ: CookieInsert, id: "sid", headers: []string{"Set-Cookie: sid=a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := parseHeaders(tt.headers)
			e := Extractor{Type: tt.typ, ID: []byte(tt.id)}
			got := e.ResponseKey(hs)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("ResponseKey = %q, want nil", got)
				}
				return
			}
			if string(got) != tt.want {
				t.Fatalf("ResponseKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestKeyAllocs(t *testing.T) {
	req := newRequest("/app;p=1?a=1&sid=9",
		"Host: h", "Authorization: Basic dG9r", "Cookie: a=1; sid=2", "X-Session: 3")
	resp := parseHeaders([]string{"Set-Cookie: sid=4; Max-Age=9", "X-Session: 5"})
	scratch := make([]byte, 0, MinScratch)
	ip := netip.MustParseAddr("2001:db8::1")
	tests := []struct {
		name string
		typ  Type
		id   string
	}{
		{name: "ip", typ: IP},
		{name: "basic", typ: Basic},
		{name: "url", typ: URL, id: "sid"},
		{name: "parm", typ: Parm},
		{name: "cookie", typ: Cookie, id: "sid"},
		{name: "header", typ: Header, id: "X-Session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Extractor{Type: tt.typ, ID: []byte(tt.id)}
			var key []byte
			allocs := testing.AllocsPerRun(100, func() {
				key = e.RequestKey(req, ip, scratch)
				_ = e.ResponseKey(resp)
			})
			if allocs != 0 || key == nil {
				t.Fatalf("RequestKey = %q with %v allocs, want a key and 0 allocs", key, allocs)
			}
		})
	}
}
