package proxy

import (
	"strings"
	"testing"
)

func TestPoundRewriteLocation(t *testing.T) {
	tests := []struct {
		name   string
		mode   string // RewriteLocation argument; "" keeps Pound's default (1)
		https  bool   // the listener is HTTPS
		host   string // request Host
		header string // response header line
		want   string // line the client gets
	}{
		{name: "backend address becomes the listener's", host: "www.ex.org:8080",
			header: "Location: http://127.0.0.2:8081/x/y?z=1", want: "Location: http://www.ex.org:8080/x/y?z=1"},
		{name: "Content-Location too, in Pound's spelling", host: "www.ex.org:8080",
			header: "Content-Location: http://127.0.0.2:8081/", want: "Content-location: http://www.ex.org:8080/"},
		{name: "listener with wrong scheme", host: "127.0.0.1:8080",
			header: "Location: https://127.0.0.1:8080/x", want: "Location: http://127.0.0.1:8080/x"},
		{name: "listener without port counts as 80 for http", host: "127.0.0.1:8080",
			header: "Location: http://127.0.0.1/x", want: "Location: http://127.0.0.1:8080/x"},
		{name: "listener with right port and scheme kept", host: "127.0.0.1:8080",
			header: "Location: http://127.0.0.1:8080/x", want: "Location: http://127.0.0.1:8080/x"},
		{name: "vhost name with wrong port", host: "localhost:8080",
			header: "Location: http://localhost:9999/x", want: "Location: http://localhost:8080/x"},
		{name: "mode 2 compares the backend only", mode: "2", host: "127.0.0.1:8080",
			header: "Location: http://127.0.0.1:9999/x", want: "Location: http://127.0.0.1:9999/x"},
		{name: "mode 2 rewrites the backend", mode: "2", host: "h:8080",
			header: "Location: http://127.0.0.2:8081/x", want: "Location: http://h:8080/x"},
		{name: "mode 0 never", mode: "0", host: "h:8080",
			header: "Location: http://127.0.0.2:8081/x", want: "Location: http://127.0.0.2:8081/x"},
		{name: "other hosts kept", host: "h:8080",
			header: "Location: http://10.9.9.9:8081/x", want: "Location: http://10.9.9.9:8081/x"},
		{name: "relative kept", host: "h:8080",
			header: "Location: /x", want: "Location: /x"},
		{name: "backend port must match", host: "h:8080",
			header: "Location: http://127.0.0.2:8082/x", want: "Location: http://127.0.0.2:8082/x"},
		{name: "https listener: http to the listener is rewritten (schemes compared whole)", https: true, host: "127.0.0.1:8080",
			header: "Location: http://127.0.0.1:8080/x", want: "Location: https://127.0.0.1:8080/x"},
		{name: "https listener: an unresolvable host equal to the request's Host", https: true, host: "site.invalid:8080",
			header: "Location: http://site.invalid/x", want: "Location: https://site.invalid:8080/x"},
		{name: "an unresolvable other host is kept", https: true, host: "site.invalid:8080",
			header: "Location: http://other.invalid/x", want: "Location: http://other.invalid/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := "\tHeaderOption none\n"
			if tt.mode != "" {
				rules += "\tRewriteLocation " + tt.mode + "\n"
			}
			f := loadFixture(t, poundCfg(rules, ""))
			if tt.https {
				f.st.Scheme = "https"
			}
			c := f.conn(t, "192.0.2.2:4000", crlfLines("GET /a HTTP/1.1\nHost: "+tt.host+"\n\n"))
			f.respond(t, c, testBackend("127.0.0.2:8081"),
				crlfLines("HTTP/1.1 302 Found\n"+tt.header+"\nContent-Length: 0\n\n"))
			got := string(c.appendResponseHead(f.st, nil, connKeep))
			want := crlfLines("HTTP/1.1 302 Found\n" + tt.want + "\nContent-Length: 0\n\n")
			if got != want {
				t.Errorf("head:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestZproxyResponseHead(t *testing.T) {
	tests := []struct {
		name           string
		lrules, srules string
		reqLine        string
		resp           string
		want           string
	}{
		{
			name: "Location to the backend gets the request's host, at the end",
			resp: "HTTP/1.1 302 Found\nLocation: http://127.0.0.2:8081/x\nContent-Length: 0\n\n",
			want: "HTTP/1.1 302 Found\nContent-Length: 0\nLocation: http://h:8080/x\n\n",
		},
		{
			name:    "RewriteUrl undone in Location",
			lrules:  "\tRewriteLocation 1 1\n",
			srules:  "\t\tRewriteUrl \"^/old\" \"/new\"\n",
			reqLine: "GET /old/a HTTP/1.1",
			resp:    "HTTP/1.1 302 Found\nLocation: http://127.0.0.2:8081/new/a/b\n\n",
			want:    "HTTP/1.1 302 Found\nLocation: http://h:8080/old/a/b\n\n",
		},
		{
			name:   "StrictTransportSecurity replaces the backend's",
			srules: "\t\tStrictTransportSecurity 100\n",
			resp:   "HTTP/1.1 200 OK\nStrict-Transport-Security: max-age=1\nContent-Length: 0\n\n",
			want:   "HTTP/1.1 200 OK\nContent-Length: 0\nStrict-Transport-Security: max-age=100\n\n",
		},
		{
			name:   "response add, remove and replace",
			lrules: "\tAddResponseHeader \"X-Added: 1\"\n\tRemoveResponseHeader \"^Server\"\n",
			srules: "\t\tReplaceHeader Response \"^X-Ver\" \"v([0-9]+)\" \"version $1\"\n",
			resp:   "HTTP/1.1 200 OK\nServer: x\nX-Ver: v2\nContent-Length: 0\n\n",
			want:   "HTTP/1.1 200 OK\nContent-Length: 0\nX-Ver: version 2\nX-Added: 1\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, zproxyCfg(tt.lrules, tt.srules))
			line := tt.reqLine
			if line == "" {
				line = "GET /a HTTP/1.1"
			}
			c := f.conn(t, "192.0.2.2:4000", crlfLines(line+"\nHost: h:8080\n\n"))
			// The request goes first: its program records what
			// RewriteUrl changed, which the Location gets back.
			c.appendRequestHead(f.st, c.ex.svc, nil)
			f.respond(t, c, testBackend("127.0.0.2:8081"), crlfLines(tt.resp))
			got := string(c.appendResponseHead(f.st, nil, connKeep))
			if want := crlfLines(tt.want); got != want {
				t.Errorf("head:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestResponseHeadFraming(t *testing.T) {
	f := loadFixture(t, poundCfg("", ""))
	tests := []struct {
		name string
		req  string
		resp string
		mode int
		want string
	}{
		{name: "hop-by-hop dropped, keep-alive said to HTTP/1.0 clients", req: "GET / HTTP/1.0\n\n",
			resp: "HTTP/1.1 200 OK\nConnection: keep-alive\nKeep-Alive: timeout=5\nContent-Length: 2\n\n",
			mode: connKeep, want: "HTTP/1.1 200 OK\nContent-Length: 2\nConnection: keep-alive\n\n"},
		{name: "chunked re-framed, close announced", req: "GET / HTTP/1.1\nHost: h\n\n",
			resp: "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n",
			mode: connClose, want: "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nConnection: close\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.conn(t, "192.0.2.2:4000", crlfLines(tt.req))
			f.respond(t, c, testBackend("127.0.0.2:8081"), crlfLines(tt.resp))
			got := string(c.appendResponseHead(f.st, nil, tt.mode))
			if want := crlfLines(tt.want); got != want {
				t.Errorf("head:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestZproxyResponseFraming: zproxy keeps the backend's framing lines in
// place, Connection carrying lbd's decision; a 101's Upgrade and
// Connection are relayed once, where the backend wrote them.
func TestZproxyResponseFraming(t *testing.T) {
	f := loadFixture(t, zproxyCfg("", ""))
	tests := []struct {
		name string
		resp string
		mode int
		want string
	}{
		{name: "Transfer-Encoding and Connection in place",
			resp: "HTTP/1.1 200 OK\nServer: s\nTransfer-Encoding: chunked\nConnection: keep-alive\nX-A: 1\n\n",
			mode: connKeep, want: "HTTP/1.1 200 OK\nServer: s\nTransfer-Encoding: chunked\nConnection: keep-alive\nX-A: 1\n\n"},
		{name: "lbd's close written at the backend's Connection line",
			resp: "HTTP/1.1 200 OK\nConnection: keep-alive\nContent-Length: 2\n\n",
			mode: connClose, want: "HTTP/1.1 200 OK\nConnection: close\nContent-Length: 2\n\n"},
		{name: "no Connection from the backend: lbd's close at the end",
			resp: "HTTP/1.1 200 OK\nContent-Length: 2\n\n",
			mode: connClose, want: "HTTP/1.1 200 OK\nContent-Length: 2\nConnection: close\n\n"},
		{name: "101 relayed once, in place",
			resp: "HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\nConnection: Upgrade\nSec-WebSocket-Accept: k\n\n",
			mode: connUpgrade, want: "HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\nConnection: Upgrade\nSec-WebSocket-Accept: k\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.conn(t, "192.0.2.2:4000", crlfLines("GET / HTTP/1.1\nHost: h\n\n"))
			f.respond(t, c, testBackend("127.0.0.2:8081"), crlfLines(tt.resp))
			got := string(c.appendResponseHead(f.st, nil, tt.mode))
			if want := crlfLines(tt.want); got != want {
				t.Errorf("head:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestParseLocation(t *testing.T) {
	tests := []struct {
		in, proto, host, path string
		ok                    bool
	}{
		{in: "http://h:1/p?q", proto: "http", host: "h:1", path: "/p?q", ok: true},
		{in: "HTTPS://h", proto: "HTTPS", host: "h", path: "", ok: true},
		{in: "x http://h/p", proto: "http", host: "h", path: "/p", ok: true},
		{in: "http:///p", ok: false},
		{in: "/relative", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			l, ok := parseLocation([]byte(tt.in))
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			if got := strings.Join([]string{string(l.proto), string(l.host), string(l.path)}, "|"); ok &&
				got != tt.proto+"|"+tt.host+"|"+tt.path {
				t.Errorf("got %q", got)
			}
		})
	}
}

// TestResponseLengthRemoved: when the response rules drop the
// Content-Length of a body that has one, the body can only end with the
// connection, so the response says Connection: close and the connection
// closes: after Pound's rules, and after zproxy's edits, whose
// Connection line written in place then says close too.
func TestResponseLengthRemoved(t *testing.T) {
	tests := []struct {
		name, cfg, resp, want string
	}{
		{name: "Pound DeleteHeader",
			cfg:  poundCfg("\tRewrite response\n\t\tDeleteHeader \"^Content-Length:\"\n\tEnd\n", ""),
			resp: "HTTP/1.1 200 OK\nServer: s\nContent-Length: 2\n\n",
			want: "HTTP/1.1 200 OK\nServer: s\nConnection: close\n\n"},
		{name: "zproxy RemoveResponseHeader, Connection in place",
			cfg:  zproxyCfg("\tRemoveResponseHeader \"^Content-Length\"\n", ""),
			resp: "HTTP/1.1 200 OK\nConnection: keep-alive\nServer: s\nContent-Length: 2\n\n",
			want: "HTTP/1.1 200 OK\nConnection: close\nServer: s\n\n"},
		{name: "zproxy RemoveResponseHeader, no Connection from the backend",
			cfg:  zproxyCfg("\tRemoveResponseHeader \"^Content-Length\"\n", ""),
			resp: "HTTP/1.1 200 OK\nServer: s\nContent-Length: 2\n\n",
			want: "HTTP/1.1 200 OK\nServer: s\nConnection: close\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, tt.cfg)
			c := f.conn(t, "192.0.2.2:4000", crlfLines("GET / HTTP/1.1\nHost: h\n\n"))
			f.respond(t, c, testBackend("127.0.0.2:8081"), crlfLines(tt.resp))
			got := string(c.appendResponseHead(f.st, nil, connKeep))
			if want := crlfLines(tt.want); got != want {
				t.Errorf("head:\n%q\nwant\n%q", got, want)
			}
			if !c.ex.closeCl {
				t.Error("the connection is not closed after the response")
			}
		})
	}
}
