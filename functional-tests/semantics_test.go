package functionaltests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests in the semantics files prove, directive by directive, that
// requests and responses are changed on the wire as Pound 4 (or zproxy)
// changes them. The backend echoes the exact bytes it received, so every
// rewrite is checked as the backend saw it; responses are checked as the
// client got them.

// semEcho is a raw HTTP/1.1 backend: it answers every request with the
// head and body it received as its body, adding the header lines extra
// returns for that request.
type semEcho struct {
	ln    net.Listener
	host  string
	port  int
	name  string
	extra func(head string) string
	mu    sync.Mutex
	conns []net.Conn
}

func semStartEcho(t *testing.T, host, name string, extra func(head string) string) *semEcho {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	e := &semEcho{ln: ln, host: host, port: ln.Addr().(*net.TCPAddr).Port, name: name, extra: extra}
	go e.accept()
	t.Cleanup(e.stop)
	return e
}

func (e *semEcho) accept() {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		e.conns = append(e.conns, c)
		e.mu.Unlock()
		go e.serve(c)
	}
}

// stop closes the listener and every connection: the backend is dead.
func (e *semEcho) stop() {
	e.ln.Close()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.conns {
		c.Close()
	}
}

func (e *semEcho) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		head, body, err := semReadRequest(br)
		if err != nil {
			return
		}
		extra := "X-Backend: " + e.name + "\r\n"
		if e.extra != nil {
			extra += e.extra(head)
		}
		echo := head + body
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n%s",
			len(echo), extra, echo)
	}
}

// semReadRequest reads one request: its head (with the final CRLF) and
// its Content-Length body.
func semReadRequest(br *bufio.Reader) (head, body string, err error) {
	var sb strings.Builder
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		sb.WriteString(line)
		if line == "\r\n" {
			break
		}
		if name, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Content-Length") {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", "", err
	}
	return sb.String(), string(b), nil
}

// block renders a BackEnd block (kind "BackEnd" or "Emergency").
func (e *semEcho) block(kind string) string {
	return fmt.Sprintf("\t\t%s\n\t\t\tAddress %s\n\t\t\tPort %d\n\t\tEnd\n", kind, e.host, e.port)
}

func (e *semEcho) addr() string { return net.JoinHostPort(e.host, strconv.Itoa(e.port)) }

// zproxyMark is a listener line only zproxy has: it makes the file a
// zproxy one.
const zproxyMark = "\tName z\n"

// semConfig is a one-listener config: global lines, listener lines and
// the service body (conditions, rules and backends).
func semConfig(global, listener, service string) string {
	return "Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 3\nClient 5\nGrace 1\n" + global +
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" + listener +
		"\tService \"s\"\n" + service + "\tEnd\nEnd\n"
}

// semDo sends raw (with \n turned into CRLF) on a new connection and
// reads one response.
func semDo(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, strings.ReplaceAll(raw, "\n", "\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response to %q: %v", raw, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// semLines turns "a\nb\n" into "a\r\nb\r\n" with {LPORT} replaced.
func semLines(s, lport string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "{LPORT}", lport), "\n", "\r\n")
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func TestSemanticsMethodSets(t *testing.T) {
	tests := []struct {
		name   string
		xhttp  string
		method string
		want   int
	}{
		{name: "xHTTP 0 allows POST", xhttp: "0", method: "POST", want: 200},
		{name: "xHTTP 0 refuses PUT with 405", xhttp: "0", method: "PUT", want: 405},
		{name: "xHTTP 1 allows DELETE", xhttp: "1", method: "DELETE", want: 200},
		{name: "xHTTP 1 refuses PROPFIND", xhttp: "1", method: "PROPFIND", want: 405},
		{name: "xHTTP 2 allows PROPFIND", xhttp: "2", method: "PROPFIND", want: 200},
		{name: "xHTTP 2 refuses SUBSCRIBE", xhttp: "2", method: "SUBSCRIBE", want: 405},
		{name: "xHTTP 3 allows BCOPY", xhttp: "3", method: "BCOPY", want: 200},
		{name: "xHTTP 0 refuses CONNECT with a path: 405, the method judged before the target", xhttp: "0", method: "CONNECT", want: 405},
	}
	be := semStartEcho(t, "127.0.0.2", "one", nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startLBD(t, semConfig("", "\txHTTP "+tt.xhttp+"\n", be.block("BackEnd")))
			resp, body := semDo(t, p.addr, tt.method+" /m HTTP/1.1\nHost: h\nContent-Length: 0\n\n")
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == 200 && !strings.HasPrefix(body, tt.method+" /m HTTP/1.1\r\n") {
				t.Errorf("backend got %q", body)
			}
		})
	}
}

func TestSemanticsRequestLimits(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", nil)
	tests := []struct {
		name     string
		listener string
		req      string
		want     int
	}{
		{name: "CheckURL mismatch is 501", listener: "\tCheckURL \"^/ok\"\n", req: "GET /bad HTTP/1.1\nHost: h\n\n", want: 501},
		{name: "CheckURL match passes", listener: "\tCheckURL \"^/ok\"\n", req: "GET /ok HTTP/1.1\nHost: h\n\n", want: 200},
		{name: "zproxy: CheckURL mismatch is 503 (Bad URL)", listener: zproxyMark + "\tCheckURL \"^/ok\"\n", req: "GET /bad HTTP/1.1\nHost: h\n\n", want: 503},
		{name: "MaxRequest over is 413", listener: "\tMaxRequest 10\n",
			req: "POST /p HTTP/1.1\nHost: h\nContent-Length: 11\n\n01234567890", want: 413},
		{name: "MaxRequest at the limit passes", listener: "\tMaxRequest 10\n",
			req: "POST /p HTTP/1.1\nHost: h\nContent-Length: 10\n\n0123456789", want: 200},
		{name: "MaxURI over is 414", listener: "\tMaxURI 8\n", req: "GET /123456789 HTTP/1.1\nHost: h\n\n", want: 414},
		{name: "MaxURI at the limit passes", listener: "\tMaxURI 8\n", req: "GET /1234567 HTTP/1.1\nHost: h\n\n", want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startLBD(t, semConfig("", tt.listener, be.block("BackEnd")))
			if resp, _ := semDo(t, p.addr, tt.req); resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

func TestSemanticsPoundRequestHeaders(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", nil)
	tests := []struct {
		name              string
		listener, service string
		req, want         string
	}{
		{name: "HeaderOption forwarded: X-Forwarded-For merged, Proto and Port added",
			req: "GET /a HTTP/1.1\nHost: h\nX-Forwarded-For: 192.0.2.9\n\n",
			want: "GET /a HTTP/1.1\nHost: h\nX-Forwarded-For: 192.0.2.9, 127.0.0.1\nX-Forwarded-Proto: http\n" +
				"X-Forwarded-Port: {LPORT}\n\n"},
		{name: "HeaderOption none", listener: "\tHeaderOption none\n",
			req: "GET /a HTTP/1.1\nHost: h\n\n", want: "GET /a HTTP/1.1\nHost: h\n\n"},
		{name: "AddHeader and SetHeader replace in place or append", listener: "\tHeaderOption none\n" +
			"\tAddHeader \"X-Add: lst\"\n\tSetHeader \"User-Agent: lbd\"\n",
			req:  "GET /a HTTP/1.1\nUser-Agent: curl\nHost: h\n\n",
			want: "GET /a HTTP/1.1\nUser-Agent: lbd\nHost: h\nX-Add: lst\n\n"},
		{name: "HeadRemove and DeleteHeader, after service matching", listener: "\tHeaderOption none\n\tHeadRemove \"^X-Secret\"\n",
			service: "\t\tHeader \"X-Secret\" \"yes\"\n\t\tDeleteHeader \"^Cookie:\"\n",
			req:     "GET /a HTTP/1.1\nHost: h\nX-Secret: yes\nCookie: c=1\nAccept: */*\n\n",
			want:    "GET /a HTTP/1.1\nHost: h\nAccept: */*\n\n"},
		{name: "service rules after the listener's", listener: "\tHeaderOption none\n\tSetHeader \"X-Tier: listener\"\n",
			service: "\t\tSetHeader \"X-Tier: service\"\n",
			req:     "GET /a HTTP/1.1\nHost: h\n\n", want: "GET /a HTTP/1.1\nHost: h\nX-Tier: service\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startLBD(t, semConfig("", tt.listener, tt.service+be.block("BackEnd")))
			resp, body := semDo(t, p.addr, tt.req)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if want := semLines(tt.want, portOf(p.addr)); body != want {
				t.Errorf("backend got\n%q\nwant\n%q", body, want)
			}
		})
	}
}

func TestSemanticsZproxyHeaders(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", func(string) string {
		return "Server: backend/1\r\nX-Ver: v7\r\n"
	})
	listener := "\tAddRequestHeader \"X-Req-Added: 1\"\n\tRemoveRequestHeader \"^Cookie\"\n" +
		"\tAddResponseHeader \"X-Resp-Added: 1\"\n\tRemoveResponseHeader \"^Server\"\n" +
		"\tReplaceHeader Request \"^User-Agent\" \"curl/(.*)\" \"agent $1\"\n" +
		"\tReplaceHeader Response \"^X-Ver\" \"v([0-9]+)\" \"version $1\"\n"
	p := startLBD(t, semConfig("", zproxyMark+listener, be.block("BackEnd")))
	resp, body := semDo(t, p.addr, "GET /z HTTP/1.1\nUser-Agent: curl/8.5\nHost: h\nCookie: c=1\n\n")
	// zproxy's order: received headers in place, replaced ones behind
	// them, then X-Forwarded-For, then AddRequestHeader lines.
	want := semLines("GET /z HTTP/1.1\nHost: h\nUser-Agent: agent 8.5\nX-Forwarded-For: 127.0.0.1\nX-Req-Added: 1\n\n", "")
	if body != want {
		t.Errorf("backend got\n%q\nwant\n%q", body, want)
	}
	checks := map[string]string{"Server": "", "X-Ver": "version 7", "X-Resp-Added": "1", "X-Backend": "one"}
	for name, v := range checks {
		if got := resp.Header.Get(name); got != v {
			t.Errorf("response %s = %q, want %q", name, got, v)
		}
	}
}

func TestSemanticsZproxyRewriteUrlAndHost(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", nil)
	listener := zproxyMark + "\tRewriteHost 1\n"
	service := "\t\tRewriteUrl \"^/api/v1/(.*)\" \"/v1/$1\"\n" + be.block("BackEnd")
	p := startLBD(t, semConfig("", listener, service))
	_, body := semDo(t, p.addr, "GET /api/v1/users?id=3 HTTP/1.1\nHost: public.example\n\n")
	// The Host RewriteHost writes comes last, as zproxy adds it.
	want := semLines("GET /v1/users?id=3 HTTP/1.1\nX-Forwarded-For: 127.0.0.1\nHost: "+be.addr()+"\n\n", "")
	if body != want {
		t.Errorf("backend got\n%q\nwant\n%q", body, want)
	}
}

func TestSemanticsZproxyStrictTransportSecurity(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", func(string) string {
		return "Strict-Transport-Security: max-age=5\r\n"
	})
	service := "\t\tStrictTransportSecurity 31536000\n" + be.block("BackEnd")
	p := startLBD(t, semConfig("", zproxyMark, service))
	resp, _ := semDo(t, p.addr, "GET / HTTP/1.1\nHost: h\n\n")
	if got := resp.Header.Values("Strict-Transport-Security"); len(got) != 1 || got[0] != "max-age=31536000" {
		t.Errorf("Strict-Transport-Security = %q", got)
	}
}

func TestSemanticsRewriteDestination(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", nil)
	p := startLBD(t, semConfig("", "\txHTTP 2\n\tHeaderOption none\n\tRewriteDestination 1\n", be.block("BackEnd")))
	_, body := semDo(t, p.addr, "MOVE /a HTTP/1.1\nHost: h\nDestination: http://h/b/c\n\n")
	want := semLines("MOVE /a HTTP/1.1\nHost: h\nDestination: http://"+be.addr()+"/b/c\n\n", "")
	if body != want {
		t.Errorf("backend got\n%q\nwant\n%q", body, want)
	}
}

// TestSemanticsSetHeaderBadReference: a SetHeader back-reference the
// service's match did not capture is answered 500, as Pound does, and
// nothing goes to the backend; a good one is expanded.
func TestSemanticsSetHeaderBadReference(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", nil)
	tests := []struct {
		name, set string
		want      int
	}{
		{"captured group", "X-P: $1", 200},
		{"group not captured", "X-P: $2", 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			service := "\t\tURL \"^/b/(.*)$\"\n\t\tSetHeader \"" + tt.set + "\"\n" + be.block("BackEnd")
			p := startLBD(t, semConfig("", "\tHeaderOption none\n", service))
			resp, body := semDo(t, p.addr, "GET /b/x HTTP/1.1\nHost: h\n\n")
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if tt.want == 200 && !strings.Contains(body, "X-P: x") {
				t.Errorf("backend got %q, want X-P: x", body)
			}
		})
	}
}
