package rules

import (
	"testing"
)

func TestSelect(t *testing.T) {
	cases := []struct {
		name    string
		global  string
		conds   string
		client  string
		line    string
		headers []string
		want    bool
	}{
		{name: "url regex", conds: `URL "^/api/"`, line: "GET /api/x", want: true},
		{name: "path ignores the query", conds: `Path -end ".php"`, line: "GET /a.php?x=1", want: true},
		{name: "query absent does not match an empty pattern", conds: `Query ""`, line: "GET /a", want: false},
		{name: "query present", conds: `Query -exact "a=1"`, line: "GET /?a=1", want: true},
		{name: "param decoded", conds: `QueryParam "q" -decode -exact "a b?"`, line: "GET /?q=a%20b%3F", want: true},
		{name: "param raw without -decode", conds: `QueryParam "q" -exact "a b"`, line: "GET /?q=a%20b", want: false},
		{name: "param without value", conds: `QueryParam "q" ".*"`, line: "GET /?q", want: false},
		{name: "header line", conds: `Header "^X-A: *1$"`, line: "GET /", headers: []string{"X-A:  1"}, want: true},
		{name: "named header value, case-insensitive by default", conds: `Header "X-A" -exact "in"`, line: "GET /", headers: []string{"x-a: IN"}, want: true},
		{name: "named header exact is whole", conds: `Header "X-A" -exact "in"`, line: "GET /", headers: []string{"X-A: inside"}, want: false},
		{name: "host exact", conds: `Host "example.org"`, line: "GET /", headers: []string{"Host: EXAMPLE.org"}, want: true},
		{name: "method", conds: `Method "^(PUT|POST)$"`, line: "PUT /", want: true},
		{name: "not", conds: `Not Path -beg "/admin"`, line: "GET /admin/x", want: false},
		{name: "match or", conds: "Match OR\n Path \"^/a\"\n Path \"^/b\"\nEnd", line: "GET /b", want: true},
		{name: "match and", conds: "Match AND\n Path \"^/a\"\n Method \"GET\"\nEnd", line: "POST /a", want: false},
		{name: "not match or", conds: "Not Match OR\n Path \"^/a\"\n Path \"^/b\"\nEnd", line: "GET /c", want: true},
		{name: "empty match inside or holds", conds: "Match OR\n Match\n End\n Path \"^/zzz\"\nEnd", line: "GET /a", want: true},
		{name: "empty match under not fails", conds: "Not Match\nEnd", line: "GET /a", want: false},
		{name: "acl ipv4", conds: "ACL\n \"192.0.2.0/24\"\nEnd", client: "192.0.2.7", line: "GET /", want: true},
		{name: "acl ipv6", conds: "ACL\n \"2001:db8::/32\"\nEnd", client: "2001:db8::1", line: "GET /", want: true},
		{name: "acl miss", conds: "ACL\n \"192.0.2.0/24\"\nEnd", client: "198.51.100.1", line: "GET /", want: false},
		{name: "named acl", global: "ACL \"lan\"\n \"10.0.0.0/8\"\nEnd", conds: `ACL "lan"`, client: "10.1.2.3", line: "GET /", want: true},
		{name: "acl forwarded through trusted proxies", global: "TrustedIP\n \"127.0.0.1\"\nEnd",
			conds: "ACL -forwarded\n \"192.0.2.0/24\"\nEnd", client: "127.0.0.1", line: "GET /",
			headers: []string{"X-Forwarded-For: 192.0.2.9"}, want: true},
		{name: "acl forwarded without TrustedIP uses the peer", conds: "ACL -forwarded\n \"192.0.2.0/24\"\nEnd",
			client: "127.0.0.1", line: "GET /", headers: []string{"X-Forwarded-For: 192.0.2.9"}, want: false},
		{name: "string match on a back-reference", conds: "Path \"^/([^/]+)\"\nStringMatch \"$1\" \"^x_\"", line: "GET /x_y", want: true},
		{name: "eval", global: "Condition \"c\" or\n Path \"^/a\"\n Path \"^/b\"\nEnd", conds: `Eval "c"`, line: "GET /b", want: true},
		{name: "pcre look-behind", conds: `Path -pcre "(?<!/private)/x$"`, line: "GET /public/x", want: true},
		{name: "pcre look-behind refuses", conds: `Path -pcre "(?<!/private)/x$"`, line: "GET /private/x", want: false},
		{name: "RegexType pcre applies to what follows", global: "RegexType pcre", conds: `Path "(?<=/a)/b"`, line: "GET /a/b", want: true},
	}
	var st State
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := compileFirst(t, wrap(tc.global, "", tc.conds))
			client := tc.client
			if client == "" {
				client = "127.0.0.1"
			}
			request(&st, p.env, client, tc.line, tc.headers...)
			got, err := p.sel.Select(&st)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Select = %v, want %v\n%v", got, tc.want, p.sel.Listing())
			}
		})
	}
}

// TestEvalOnceAndPrivateGroups checks that a detached condition is
// evaluated once per request and that its groups stay inside it.
func TestEvalOnceAndPrivateGroups(t *testing.T) {
	src := wrap("Condition \"c\"\n Path \"^/e(x)\"\nEnd", "",
		"Path \"^/(.)\"\nEval \"c\"\nSetHeader \"X: $1\"")
	p := compileFirst(t, src)
	var st State
	request(&st, p.env, "127.0.0.1", "GET /ex")
	for i := 0; i < 2; i++ { // the second Select reads the cached result
		if ok, err := p.sel.Select(&st); err != nil || !ok {
			t.Fatalf("Select %d = %v, %v", i, ok, err)
		}
	}
	if st.evals[0] != 2 {
		t.Fatalf("cached result %d, want 2 (true)", st.evals[0])
	}
	if err := p.req.Rewrite(&st, &st.Req); err != nil {
		t.Fatal(err)
	}
	if got := lines(&st.Req); got != "X: e|" {
		t.Fatalf("headers %q: $1 must be the Path's group, not the condition's", got)
	}
}
