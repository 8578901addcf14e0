package proxy

import (
	"context"
	"net"
	"strings"
	"testing"

	"lbd/backend"
	"lbd/config"
)

// tlsMemConn is a memConn that arrived over TLS.
type tlsMemConn struct {
	*memConn
	ssl  []byte
	mode int
}

func (c *tlsMemConn) SSLHeaders() []byte { return c.ssl }
func (c *tlsMemConn) NoHTTPS11() int     { return c.mode }

const sslLines = "X-SSL-cipher: TLSv1.3/TLS_AES_128_GCM_SHA256\r\nX-SSL-Subject: CN = alice\r\n"

// tlsCycle serves req on a fresh TLS client connection and returns what
// the backend received and whether the connection stays open.
func tlsCycle(t *testing.T, req string, ssl []byte, mode int) (string, bool) {
	t.Helper()
	be := &memConn{reply: []byte(benchResponse), keep: true}
	_, st, _ := newMemProxy(t, be)
	client := &tlsMemConn{memConn: &memConn{in: []byte(req)}, ssl: ssl, mode: mode}
	c := newConn(NewServer(st), client)
	if err := c.readHead(st); err != nil {
		t.Fatalf("readHead: %v", err)
	}
	open := c.handle(st)
	return string(be.out), open
}

func TestSSLHeadersReachBackend(t *testing.T) {
	tests := []struct {
		name, req string
		ssl       []byte
		want      []string
		absent    []string
	}{
		{"appended after X-Forwarded",
			"GET / HTTP/1.1\r\nHost: a\r\n\r\n", []byte(sslLines),
			[]string{"X-Forwarded-Port: 40000\r\n" + sslLines + "\r\n"}, nil},
		{"forged client lines are dropped, others kept",
			"GET / HTTP/1.1\r\nHost: a\r\nX-SSL-Subject: CN = root\r\nx-ssl-CERTIFICATE: x\r\nX-SSL-Other: kept\r\n\r\n", []byte(sslLines),
			[]string{"X-SSL-Other: kept\r\n", "X-SSL-Subject: CN = alice\r\n"}, []string{"CN = root", "x-ssl-CERTIFICATE"}},
		{"HeaderOption without ssl passes client lines",
			"GET / HTTP/1.1\r\nHost: a\r\nX-SSL-Subject: CN = root\r\n\r\n", nil,
			[]string{"X-SSL-Subject: CN = root\r\n"}, []string{"X-SSL-cipher"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := tlsCycle(t, tt.req, tt.ssl, 0)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("backend head lacks %q:\n%s", w, got)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(got, a) {
					t.Errorf("backend head has %q:\n%s", a, got)
				}
			}
		})
	}
}

func TestNoHTTPS11(t *testing.T) {
	tests := []struct {
		name, ua string
		mode     int
		open     bool
	}{
		{"0 keeps alive", "curl", 0, true},
		{"1 closes", "curl", 1, false},
		{"2 keeps other agents", "curl", 2, true},
		{"2 closes MSIE", "Mozilla/4.0 (compatible; MSIE 6.0)", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, open := tlsCycle(t, "GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: "+tt.ua+"\r\n\r\n", nil, tt.mode)
			if open != tt.open {
				t.Errorf("connection open = %v, want %v", open, tt.open)
			}
		})
	}
}

// The X-SSL lines must not cost the HTTP/1.1-over-TLS path an allocation.
func TestTLSRequestCycleDoesNotAllocate(t *testing.T) {
	be := &memConn{reply: []byte(benchResponse)}
	_, st, _ := newMemProxy(t, be)
	client := &tlsMemConn{memConn: &memConn{in: []byte(benchRequest)}, ssl: []byte(sslLines)}
	c := newConn(NewServer(st), client)
	allocs := testing.AllocsPerRun(1000, func() {
		client.off = 0
		c.r, c.w = 0, 0
		if err := c.readHead(st); err != nil || !c.handle(st) {
			t.Fatal("cycle failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("TLS request cycle allocates %.1f times per request, want 0", allocs)
	}
}

func TestBindServerName(t *testing.T) {
	named := backend.New(backend.Options{Address: "127.0.0.1:1", ServerName: "internal.test",
		DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, context.Canceled }})
	plain := backend.New(backend.Options{Address: "127.0.0.1:1"})
	tests := []struct {
		name, head string
		b          *backend.Backend
		want       string
	}{
		{"Host replaced", "GET / HTTP/1.1\r\nHost: public.test\r\nA: b\r\n\r\nBODY", named,
			"GET / HTTP/1.1\r\nHost: internal.test\r\nA: b\r\n\r\nBODY"},
		{"Host added for HTTP/1.0", "GET / HTTP/1.0\r\nA: b\r\n\r\n", named,
			"GET / HTTP/1.0\r\nA: b\r\nHost: internal.test\r\n\r\n"},
		{"no ServerName, no change", "GET / HTTP/1.1\r\nHost: public.test\r\n\r\n", plain,
			"GET / HTTP/1.1\r\nHost: public.test\r\n\r\n"},
	}
	c := &conn{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := c.bindServerName(tt.b, []byte(tt.head))
			if string(out) != tt.want {
				t.Errorf("got  %q\nwant %q", out, tt.want)
			}
			if again := c.bindServerName(tt.b, out); string(again) != tt.want {
				t.Errorf("not idempotent: %q", again)
			}
		})
	}
}

func TestNoSSLReply(t *testing.T) {
	tests := []struct {
		name string
		n    *config.ErrNoSSL
		want []string
	}{
		{"default", nil, []string{"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nContent-Length: 17\r\n" +
			"Expires: now\r\nPragma: no-cache\r\nServer: zproxy/\r\nCache-control: no-cache,no-store\r\n\r\nPlease use HTTPS."}},
		{"page", &config.ErrNoSSL{Status: 505, Page: &config.ErrorPage{Body: []byte("tls!")}}, []string{"HTTP/1.1 505 HTTP Version Not Supported\r\n", "Content-Length: 4\r\n", "\r\n\r\ntls!"}},
		{"redirect, its header block ended", &config.ErrNoSSL{Redirect: "https://x.test/", Code: 307}, []string{"HTTP/1.1 307 Temporary Redirect\r\n" +
			"Expires: now\r\nPragma: no-cache\r\nLocation: https://x.test/\r\nServer: zproxy/\r\nCache-control: no-cache,no-store\r\n\r\n"}},
		{"redirect code other than 301 and 307", &config.ErrNoSSL{Redirect: "https://x.test/", Code: 303}, []string{"HTTP/1.1 302 Found\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(NoSSLReply(tt.n))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("reply lacks %q:\n%q", w, got)
				}
			}
		})
	}
}
