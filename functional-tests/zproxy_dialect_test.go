package functionaltests

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What a zproxy user sees on the wire and on the control socket, through
// a zproxy file and the real binary.

// TestZproxyFramingInPlace: the backend's Transfer-Encoding and
// Connection lines stay where the backend wrote them, Connection
// carrying lbd's own decision; a backend that says close closes the
// client connection too.
func TestZproxyFramingInPlace(t *testing.T) {
	be := connBackend(t, "127.0.0.2", serveFraming)
	p := startLBD(t, semConfig("", zproxyMark, be.block()))
	raw, closed := rawExchange(t, p.addr, []byte("GET /keep HTTP/1.1\r\nHost: h\r\n\r\n"), 500*time.Millisecond)
	want := "HTTP/1.1 200 OK\r\nServer: raw\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\nX-After: 1\r\n\r\n"
	if !strings.HasPrefix(string(raw), want) || closed {
		t.Errorf("keep-alive reply %q (closed %v), want it to start %q and stay open", raw, closed, want)
	}
	raw, closed = rawExchange(t, p.addr, []byte("GET /close HTTP/1.1\r\nHost: h\r\n\r\n"), 2*time.Second)
	want = "HTTP/1.1 200 OK\r\nServer: raw\r\nTransfer-Encoding: chunked\r\nConnection: close\r\nX-After: 1\r\n\r\n"
	if !strings.HasPrefix(string(raw), want) || !closed {
		t.Errorf("close reply %q (closed %v), want it to start %q and the connection closed", raw, closed, want)
	}
}

// serveFraming answers every request chunked, saying Connection:
// keep-alive, or close (and closing) for /close.
func serveFraming(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		conn := "keep-alive"
		if req.URL.Path == "/close" {
			conn = "close"
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nServer: raw\r\nTransfer-Encoding: chunked\r\nConnection: %s\r\nX-After: 1\r\n\r\n2\r\nok\r\n0\r\n\r\n", conn)
		if conn == "close" {
			return
		}
	}
}

// TestLateErrorPageArrives: an error page written after a backend outlived
// the client timeout still reaches the client (its write deadline runs
// from the moment it is written): Pound's 503, zproxy's 504.
func TestLateErrorPageArrives(t *testing.T) {
	hang := startBackend(t, "127.0.0.2", "hang", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(4 * time.Second):
		}
	}))
	for _, tc := range []struct {
		name, mark, want string
	}{
		{name: "pound", mark: "", want: "HTTP/1.1 503 Service Unavailable\r\n"},
		{name: "zproxy", mark: zproxyMark, want: "HTTP/1.0 504 Gateway timeout\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := "Daemon 0\nLogLevel 0\nAlive 30\nTimeOut 2\nClient 1\nGrace 1\n" +
				"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" + tc.mark + "\tService\n" + hang.block() + "\tEnd\nEnd\n"
			p := startLBD(t, cfg)
			raw, _ := rawExchange(t, p.addr, []byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), 5*time.Second)
			if !strings.HasPrefix(string(raw), tc.want) {
				t.Errorf("after the backend timeout got %q, want it to start %q", raw, tc.want)
			}
		})
	}
}

// TestZproxyControlOnTheControlSocket: with -C naming the file's own
// Control socket lbd serves one socket, in zproxy's dialect; the
// listener counts the replies lbd wrote itself, response rules apply to
// them, and connect-time is never negative.
func TestZproxyControlOnTheControlSocket(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	dir := t.TempDir()
	sock := filepath.Join(dir, "ctl.sock")
	cfg := "Daemon 0\nLogLevel 0\nAlive 30\nControl \"" + sock + "\"\n" +
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tAddResponseHeader \"X-Added: 1\"\n" +
		"\tService \"redir\"\n\t\tURL \"^/go\"\n\t\tRedirect \"http://example.test/\"\n\tEnd\n" +
		"\tService \"none\"\n\t\tURL \"^/none\"\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 1\n\t\tEnd\n\tEnd\n" +
		"\tService \"web\"\n" + be.block() + "\tEnd\nEnd\n"
	p := startLBD(t, cfg, "-C", sock)
	raw, _ := rawExchange(t, p.addr, []byte("GET /go HTTP/1.1\r\nHost: h\r\n\r\n"), 2*time.Second)
	if want := "HTTP/1.0 302 Found\r\nContent-Type: text/html\r\nContent-Length: 157\r\nLocation: http://example.test/\r\nX-Added: 1\r\n\r\n"; !strings.HasPrefix(string(raw), want) {
		t.Errorf("redirect %q, want it to start %q", raw, want)
	}
	raw, _ = rawExchange(t, p.addr, []byte("GET /none HTTP/1.1\r\nHost: h\r\n\r\n"), 2*time.Second)
	if !strings.HasPrefix(string(raw), "HTTP/1.0 503 no backend\r\n") || !strings.Contains(string(raw), "X-Added: 1\r\n") {
		t.Errorf("no backend reply %q", raw)
	}
	raw, _ = rawExchange(t, p.addr, []byte("GET /x HTTP/1.1\r\nHost: h\r\n\r\n"), 500*time.Millisecond)
	if !strings.HasPrefix(string(raw), "HTTP/1.1 200 OK\r\n") {
		t.Fatalf("web: %q", raw)
	}
	var l struct {
		Hits3xx  int `json:"3xx-code-hits"`
		Hits5xx  int `json:"5xx-code-hits"`
		Services []struct {
			Name     string `json:"name"`
			Backends []struct {
				ConnectTime float64 `json:"connect-time"`
			} `json:"backends"`
		} `json:"services"`
	}
	if err := json.Unmarshal([]byte(unixGet(t, sock, "/listener/0")), &l); err != nil {
		t.Fatal(err)
	}
	if l.Hits3xx != 1 || l.Hits5xx != 1 {
		t.Errorf("listener code hits 3xx=%d 5xx=%d, want 1 and 1", l.Hits3xx, l.Hits5xx)
	}
	for _, s := range l.Services {
		if s.Name == "redir" && len(s.Backends) != 0 {
			t.Errorf("redirect service lists %d backends, zproxy lists none", len(s.Backends))
		}
		for _, b := range s.Backends {
			if b.ConnectTime < 0 {
				t.Errorf("service %s: connect-time %v", s.Name, b.ConnectTime)
			}
		}
	}
}

// unixGet does GET path on the control socket and returns the body.
func unixGet(t *testing.T, sock, path string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	resp, body := get(t, c, "http://localhost"+path)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

// TestZproxyHTTPSIsHTTP11: a zproxy HTTPS listener offers only HTTP/1.1
// by ALPN; HTTP2 1 (an lbd extension) offers h2 again.
func TestZproxyHTTPSIsHTTP11(t *testing.T) {
	pki := newTLSPKI(t)
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	for _, tc := range []struct {
		name, extra, want string
	}{
		{name: "default", extra: "Name z\nCert \"" + pki.path("a.pem") + "\"", want: "http/1.1"},
		{name: "HTTP2 1", extra: "Name z\nCert \"" + pki.path("a.pem") + "\"\nHTTP2 1", want: "h2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startLBD(t, httpsListener(tc.extra, be))
			cfg := pki.tlsConfig("a.test")
			cfg.NextProtos = []string{"h2", "http/1.1"}
			conn, err := tls.Dial("tcp", p.addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got := conn.ConnectionState().NegotiatedProtocol; got != tc.want {
				t.Errorf("ALPN %q, want %q", got, tc.want)
			}
		})
	}
}

// TestZproxyEditsOnTheWire: every zproxy header and URL directive at
// once, through a zproxy file and the real binary, in both directions.
// The backend sees the received lines in place, then the replaced one,
// X-Forwarded-For, the added line, the Host of RewriteHost and the
// Destination of RewriteDestination; the client sees the backend's lines
// but the removed and replaced ones in place, then the replaced one, the
// rewritten Location, the added line and Strict-Transport-Security.
func TestZproxyEditsOnTheWire(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", func(string) string {
		return "Server: backend/1\r\nX-Ver: v7\r\nLocation: http://127.0.0.2:" + "{BEPORT}" + "/v1/next\r\nX-Tail: 1\r\n"
	})
	beport := strconv.Itoa(be.port)
	inner := be.extra
	be.extra = func(h string) string { return strings.ReplaceAll(inner(h), "{BEPORT}", beport) }
	listener := zproxyMark + "\txHTTP 2\n\tRewriteHost 1\n\tRewriteDestination 1\n\tRewriteLocation 1 1\n" +
		"\tAddRequestHeader \"X-Req-Added: 1\"\n\tRemoveRequestHeader \"^Cookie\"\n" +
		"\tReplaceHeader Request \"^User-Agent\" \"curl/(.*)\" \"agent $1\"\n" +
		"\tAddResponseHeader \"X-Resp-Added: 1\"\n\tRemoveResponseHeader \"^Server\"\n" +
		"\tReplaceHeader Response \"^X-Ver\" \"v([0-9]+)\" \"version $1\"\n"
	service := "\t\tRewriteUrl \"^/api/(v1)/\" \"/$1/\" last\n\t\tStrictTransportSecurity 60\n" + be.block("BackEnd")
	p := startLBD(t, semConfig("", listener, service))
	req := "MOVE /api/v1/users?id=3 HTTP/1.1\r\nUser-Agent: curl/8.5\r\nHost: public.example\r\nCookie: c=1\r\n" +
		"X-Forwarded-For: 192.0.2.7\r\nDestination: http://public.example/api/v1/other\r\nAccept: */*\r\n\r\n"
	raw, _ := rawExchange(t, p.addr, []byte(req), time.Second)
	head, body, ok := strings.Cut(string(raw), "\r\n\r\n")
	if !ok {
		t.Fatalf("no response head in %q", raw)
	}
	wantReq := "MOVE /v1/users?id=3 HTTP/1.1\r\nAccept: */*\r\nUser-Agent: agent 8.5\r\n" +
		"X-Forwarded-For: 192.0.2.7, 127.0.0.1\r\nX-Req-Added: 1\r\nHost: " + be.addr() + "\r\n" +
		"Destination: http://" + be.addr() + "/api/v1/other\r\n\r\n"
	if body != wantReq {
		t.Errorf("backend got\n%q\nwant\n%q", body, wantReq)
	}
	wantResp := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + strconv.Itoa(len(wantReq)) +
		"\r\nX-Backend: one\r\nX-Tail: 1\r\nX-Ver: version 7\r\nLocation: http://public.example/api/v1/next\r\n" +
		"X-Resp-Added: 1\r\nStrict-Transport-Security: max-age=60"
	if head != wantResp {
		t.Errorf("client got\n%q\nwant\n%q", head, wantResp)
	}
}
