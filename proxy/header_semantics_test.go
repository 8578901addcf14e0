package proxy

import (
	"fmt"
	"testing"
)

// poundCfg is a Pound listener on 127.0.0.1:8080 with one service; lrules
// and srules are inserted into the listener and the service.
func poundCfg(lrules, srules string) string {
	return fmt.Sprintf("ListenHTTP\n\tAddress 127.0.0.1\n\tPort 8080\n%s\tService \"s\"\n%s"+
		"\t\tBackEnd\n\t\t\tAddress 127.0.0.2\n\t\t\tPort 8081\n\t\tEnd\n\tEnd\nEnd\n", lrules, srules)
}

func zproxyCfg(lrules, srules string) string {
	// A listener Name makes the file a zproxy one (RoutingPolicy alone
	// would not).
	return fmt.Sprintf("ListenHTTP\n\tName z\n\tAddress 127.0.0.1\n\tPort 8080\n%s\tService \"s\"\n\t\tRoutingPolicy ROUND_ROBIN\n%s"+
		"\t\tBackEnd\n\t\t\tAddress 127.0.0.2\n\t\t\tPort 8081\n\t\tEnd\n\tEnd\nEnd\n", lrules, srules)
}

// poundHeadCases are requests and the heads Pound 4 sends for them.
var poundHeadCases = []struct {
	name           string
	lrules, srules string
	client         string
	req            string
	want           string
}{
	{
		name: "forwarding headers appended",
		req:  "GET /a HTTP/1.1\nHost: h\nUser-Agent: u\n\n",
		want: "GET /a HTTP/1.1\nHost: h\nUser-Agent: u\nX-Forwarded-For: 192.0.2.2\n" +
			"X-Forwarded-Proto: http\nX-Forwarded-Port: 8080\n\n",
	},
	{
		name: "client X-Forwarded-For merged and Proto replaced in place",
		req:  "GET /a HTTP/1.1\nx-forwarded-for: 10.0.0.1\nX-Forwarded-Proto: https\nHost: h\n\n",
		want: "GET /a HTTP/1.1\nx-forwarded-for: 10.0.0.1, 192.0.2.2\nX-Forwarded-Proto: http\nHost: h\n" +
			"X-Forwarded-Port: 8080\n\n",
	},
	{
		name: "received lines sent as received",
		req:  "GET /a HTTP/1.1\nHost:h\nX-A:   b c\n\n",
		want: "GET /a HTTP/1.1\nHost:h\nX-A:   b c\nX-Forwarded-For: 192.0.2.2\n" +
			"X-Forwarded-Proto: http\nX-Forwarded-Port: 8080\n\n",
	},
	{
		name:   "HeaderOption none adds nothing",
		lrules: "\tHeaderOption none\n",
		req:    "GET /a HTTP/1.1\nHost: h\n\n",
		want:   "GET /a HTTP/1.1\nHost: h\n\n",
	},
	{
		name:   "IPv6 client in brackets",
		client: "[2001:db8::7]:4000",
		lrules: "\tHeaderOption no-ssl\n",
		req:    "GET /a HTTP/1.1\nHost: h\n\n",
		want: "GET /a HTTP/1.1\nHost: h\nX-Forwarded-For: [2001:db8::7]\nX-Forwarded-Proto: http\n" +
			"X-Forwarded-Port: 8080\n\n",
	},
	{
		name:   "hop-by-hop and Expect not forwarded",
		lrules: "\tHeaderOption none\n",
		req:    "POST /a HTTP/1.1\nHost: h\nConnection: keep-alive, X-Hop\nX-Hop: 1\nKeep-Alive: 5\nExpect: 100-continue\nContent-Length: 0\n\n",
		want:   "POST /a HTTP/1.1\nHost: h\nContent-Length: 0\n\n",
	},
	{
		name:   "SetHeader replaces the first header of that name in place",
		lrules: "\tHeaderOption none\n\tSetHeader \"X-Set: listener\"\n",
		req:    "GET /a HTTP/1.1\nx-set: client\nHost: h\nX-Set: second\n\n",
		want:   "GET /a HTTP/1.1\nX-Set: listener\nHost: h\nX-Set: second\n\n",
	},
	{
		name:   "SetHeader appends when absent, AddHeader is its alias",
		lrules: "\tHeaderOption none\n\tAddHeader \"X-Add: 1\"\n\tSetHeader \"X-Set: 2\"\n",
		req:    "GET /a HTTP/1.1\nHost: h\n\n",
		want:   "GET /a HTTP/1.1\nHost: h\nX-Add: 1\nX-Set: 2\n\n",
	},
	{
		name:   "DeleteHeader also removes what Pound added",
		lrules: "\tDeleteHeader \"^X-Forwarded-P\"\n\tHeadRemove \"^Cookie:\"\n",
		req:    "GET /a HTTP/1.1\nHost: h\nCookie: a=b\n\n",
		want:   "GET /a HTTP/1.1\nHost: h\nX-Forwarded-For: 192.0.2.2\n\n",
	},
	{
		name:   "service rules run after the listener's",
		lrules: "\tHeaderOption none\n\tSetHeader \"X-A: 1\"\n\tSetHeader \"X-B: 1\"\n",
		srules: "\t\tDeleteHeader \"^X-A:\"\n\t\tSetHeader \"X-B: 2\"\n",
		req:    "GET /a HTTP/1.1\nHost: h\n\n",
		want:   "GET /a HTTP/1.1\nHost: h\nX-B: 2\n\n",
	},
	{
		name:   "DeleteHeader sees the merged X-Forwarded-For",
		lrules: "\tHeaderOption no-ssl\n\tDeleteHeader \"^X-Forwarded-For: 10.0.0.1, 192.0.2.2$\"\n",
		req:    "GET /a HTTP/1.1\nX-Forwarded-For: 10.0.0.1\nHost: h\n\n",
		want:   "GET /a HTTP/1.1\nHost: h\nX-Forwarded-Proto: http\nX-Forwarded-Port: 8080\n\n",
	},
	{
		name:   "SetHeader expands back-references and accessors",
		lrules: "\tHeaderOption none\n",
		srules: "\t\tURL \"^/echo/(.*)$\"\n\t\tSetHeader \"X-Path: $1 %[host]%[port]\"\n",
		req:    "GET /echo/foo HTTP/1.1\nHost: ex.org:81\n\n",
		want:   "GET /echo/foo HTTP/1.1\nHost: ex.org:81\nX-Path: foo ex.org:81\n\n",
	},
	{
		name:   "absolute-form target sent as origin-form with its Host",
		lrules: "\tHeaderOption none\n",
		req:    "GET http://ex.org/p?q=1 HTTP/1.1\nHost: other\n\n",
		want:   "GET /p?q=1 HTTP/1.1\nHost: ex.org\n\n",
	},
}

// TestBadExpansionIsMarked: a SetHeader with a back-reference the
// request's match does not have marks the exchange, which forward
// answers with 500 as Pound does; a good one does not.
func TestBadExpansionIsMarked(t *testing.T) {
	tests := []struct {
		name, set string
		bad       bool
	}{
		{"existing group", "X-P: $1", false},
		{"missing group", "X-P: $3", true},
		{"unknown accessor form", "X-P: %[", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, poundCfg("\tHeaderOption none\n", "\t\tURL \"^/echo/(.*)$\"\n\t\tSetHeader \""+tt.set+"\"\n"))
			c := f.conn(t, "192.0.2.2:4000", crlfLines("GET /echo/foo HTTP/1.1\nHost: h\n\n"))
			c.appendRequestHead(f.st, c.ex.svc, nil)
			if c.ex.badExpand != tt.bad {
				t.Errorf("badExpand = %v, want %v", c.ex.badExpand, tt.bad)
			}
		})
	}
}

func TestPoundRequestHead(t *testing.T) {
	tests := poundHeadCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, poundCfg(tt.lrules, tt.srules))
			client := tt.client
			if client == "" {
				client = "192.0.2.2:4000"
			}
			c := f.conn(t, client, crlfLines(tt.req))
			if c.ex.svc == nil {
				t.Fatal("request not routed")
			}
			got := string(c.appendRequestHead(f.st, c.ex.svc, nil))
			if want := crlfLines(tt.want); got != want {
				t.Errorf("head:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestZproxyRequestHead(t *testing.T) {
	tests := []struct {
		name           string
		lrules, srules string
		req            string
		want           string
	}{
		{
			name: "Host stays in place, X-Forwarded-For rebuilt behind the received headers",
			req:  "GET /a HTTP/1.1\nUser-Agent: u\nHost: h\nX-Forwarded-For: 1.1.1.1\nAccept: */*\n\n",
			want: "GET /a HTTP/1.1\nUser-Agent: u\nHost: h\nAccept: */*\nX-Forwarded-For: 1.1.1.1, 192.0.2.2\n\n",
		},
		{
			name:   "listener add and remove",
			lrules: "\tAddRequestHeader \"X-L: 1\"\n\tRemoveRequestHeader \"^Cookie\"\n",
			req:    "GET /a HTTP/1.1\nHost: h\nCookie: c\n\n",
			want:   "GET /a HTTP/1.1\nHost: h\nX-Forwarded-For: 192.0.2.2\nX-L: 1\n\n",
		},
		{
			name:   "service list of a kind replaces the listener's, other kinds stay",
			lrules: "\tAddRequestHeader \"X-L: 1\"\n\tRemoveRequestHeader \"^Cookie\"\n",
			srules: "\t\tAddRequestHeader \"X-S: 2\"\n",
			req:    "GET /a HTTP/1.1\nHost: h\nCookie: c\n\n",
			want:   "GET /a HTTP/1.1\nHost: h\nX-Forwarded-For: 192.0.2.2\nX-S: 2\n\n",
		},
		{
			name:   "ReplaceHeader rewrites the value and moves the line",
			lrules: "\tReplaceHeader Request \"^User-Agent\" \"curl/(.*)\" \"agent-$1\"\n",
			req:    "GET /a HTTP/1.1\nUser-Agent: curl/8.1\nHost: h\nAccept: */*\n\n",
			want:   "GET /a HTTP/1.1\nHost: h\nAccept: */*\nUser-Agent: agent-8.1\nX-Forwarded-For: 192.0.2.2\n\n",
		},
		{
			name:   "lbd's framing lines follow the received ones, before the moved ones",
			lrules: "\tReplaceHeader Request \"^User-Agent\" \"curl/(.*)\" \"agent-$1\"\n",
			req:    "POST /a HTTP/1.1\nUser-Agent: curl/8.1\nHost: h\nTransfer-Encoding: chunked\n\n",
			want:   "POST /a HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\nUser-Agent: agent-8.1\nX-Forwarded-For: 192.0.2.2\n\n",
		},
		{
			name:   "RewriteUrl edits the request line",
			srules: "\t\tRewriteUrl \"^/old/(.*)\" \"/new/$1\"\n",
			req:    "GET /old/x?y=1 HTTP/1.1\nHost: h\n\n",
			want:   "GET /new/x?y=1 HTTP/1.1\nHost: h\nX-Forwarded-For: 192.0.2.2\n\n",
		},
		{
			name:   "a PARM session's ;param is not forwarded, the query is",
			srules: "\t\tSession\n\t\t\tType PARM\n\t\t\tTTL 60\n\t\tEnd\n",
			req:    "GET /a;sess1?x=1 HTTP/1.1\nHost: h\n\n",
			want:   "GET /a?x=1 HTTP/1.1\nHost: h\nX-Forwarded-For: 192.0.2.2\n\n",
		},
		{
			name:   "RewriteUrl last stops the rules",
			srules: "\t\tRewriteUrl \"^/a\" \"/b\" last\n\t\tRewriteUrl \"^/b\" \"/c\"\n",
			req:    "GET /a HTTP/1.1\nHost: h\n\n",
			want:   "GET /b HTTP/1.1\nHost: h\nX-Forwarded-For: 192.0.2.2\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, zproxyCfg(tt.lrules, tt.srules))
			if f.st.Dialect != "zproxy" {
				t.Fatalf("dialect %s", f.st.Dialect)
			}
			c := f.conn(t, "192.0.2.2:4000", crlfLines(tt.req))
			got := string(c.appendRequestHead(f.st, c.ex.svc, nil))
			if want := crlfLines(tt.want); got != want {
				t.Errorf("head:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestBindBackendRewritesDestinationAndHost(t *testing.T) {
	tests := []struct {
		name string
		cfg  string
		req  string
		want string
	}{
		{
			name: "Pound RewriteDestination names the backend",
			cfg:  poundCfg("\tHeaderOption none\n\tRewriteDestination 1\n", ""),
			req:  "MOVE /a HTTP/1.1\nHost: h\nDestination: http://h:8080/b/c\n\n",
			want: "MOVE /a HTTP/1.1\nHost: h\nDestination: http://127.0.0.2:8081/b/c\n\n",
		},
		{
			name: "zproxy RewriteHost names the backend",
			cfg:  zproxyCfg("\tRewriteHost 1\n", ""),
			req:  "GET /a HTTP/1.1\nHost: h\nDestination: http://h:8080/b\n\n",
			want: "GET /a HTTP/1.1\nDestination: http://h:8080/b\nX-Forwarded-For: 192.0.2.2\nHost: 127.0.0.2:8081\n\n",
		},
		{
			name: "no rewrite configured leaves the head alone",
			cfg:  poundCfg("\tHeaderOption none\n", ""),
			req:  "MOVE /a HTTP/1.1\nHost: h\nDestination: http://h:8080/b\n\n",
			want: "MOVE /a HTTP/1.1\nHost: h\nDestination: http://h:8080/b\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, strings2xhttp(tt.cfg))
			c := f.conn(t, "192.0.2.2:4000", crlfLines(tt.req))
			head := c.appendRequestHead(f.st, c.ex.svc, nil)
			body := "BODY"
			out := append(head, body...)
			for i := 0; i < 2; i++ { // rebinding (a retry) must give the same head
				out = c.bindBackend(f.st, c.ex.svc, testBackend("127.0.0.2:8081"), out)
			}
			if got, want := string(out), crlfLines(tt.want)+body; got != want {
				t.Errorf("head:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// strings2xhttp allows WebDAV methods in the fixture's listener.
func strings2xhttp(cfg string) string {
	return replaceOnce(cfg, "\tPort 8080\n", "\tPort 8080\n\txHTTP 2\n")
}

func replaceOnce(s, old, repl string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + repl + s[i+len(old):]
		}
	}
	return s
}
