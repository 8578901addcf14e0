package functionaltests

// The plain HTTP/1.1 I/O paths (issue 20): lbd waits for a client's next
// request and for a backend's answer without first trying a read that
// must fail. These tests drive the real binary through every case where
// such a wait could hang or cut a connection short: keep-alive with
// every kind of body, requests pipelined while one is served, a client
// that half-closes, heads that trickle in, client and backend timeouts,
// slow backends, and a pooled backend connection the backend half-closed
// while it was idle. Each client read has a deadline far below the
// timeouts a hang would run into.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// plainConfig is one service over bs with the given Client and TimeOut
// (seconds).
func plainConfig(client, timeout int, bs ...*backend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Daemon 0\nLogLevel 0\nAlive 30\nTimeOut %d\nClient %d\nGrace 1\n", timeout, client)
	b.WriteString("ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n\tService\n")
	for _, be := range bs {
		b.WriteString(be.block())
	}
	b.WriteString("\tEnd\nEnd\n")
	return b.String()
}

// plainClient connects to addr; every read must come within 4 s.
func plainClient(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(4 * time.Second))
	return c, bufio.NewReader(c)
}

// response reads one response: status, a header and the body.
func response(t *testing.T, br *bufio.Reader, header string) (int, string, string) {
	t.Helper()
	return responseTo(t, br, nil, header)
}

// responseTo reads the response to req (nil: a GET).
func responseTo(t *testing.T, br *bufio.Reader, req *http.Request, header string) (int, string, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading a body: %v", err)
	}
	return resp.StatusCode, resp.Header.Get(header), string(body)
}

// closedNow checks that lbd closed the connection within the read
// deadline.
func closedNow(t *testing.T, br *bufio.Reader) {
	t.Helper()
	if b, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("want the connection closed, got %q, %v", b, err)
	}
}

// delayed answers like echoHandler after the delay its "delay" query
// parameter names.
func delayed(name string) http.Handler {
	echo := echoHandler(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil {
			time.Sleep(d)
		}
		echo.ServeHTTP(w, r)
	})
}

func TestPlainIOKeepAliveEveryBody(t *testing.T) {
	var conns atomic.Int64
	b := startBackend(t, "127.0.0.2", "one", delayed("one"))
	b.srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	p := startLBD(t, plainConfig(10, 10, b))
	c, br := plainClient(t, p.addr)
	for i := 0; i < 8; i++ {
		steps := []struct {
			name, send, later, want string
			interim                 bool // a 100 Continue comes first
		}{
			{name: "GET", send: "GET /g HTTP/1.1\r\nHost: x\r\n\r\n", want: "GET /g"},
			{name: "body with the head", send: "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", want: "body=5"},
			{name: "body after the head", send: "POST /l HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", later: "hello", want: "body=5"},
			{name: "chunked", send: "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", want: "body=3"},
			{name: "100-continue", send: "POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n", later: "ok", want: "body=2", interim: true},
			{name: "HEAD", send: "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n", want: ""},
		}
		for _, s := range steps {
			c.SetReadDeadline(time.Now().Add(4 * time.Second))
			c.Write([]byte(s.send))
			if s.interim {
				line, err := br.ReadString('\n')
				if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
					t.Fatalf("%s: %q, %v; want 100 Continue", s.name, line, err)
				}
				br.ReadString('\n')
			}
			if s.later != "" {
				time.Sleep(20 * time.Millisecond)
				c.Write([]byte(s.later))
			}
			var req *http.Request
			if s.name == "HEAD" {
				req = &http.Request{Method: "HEAD"}
			}
			code, be, body := responseTo(t, br, req, "X-Backend")
			if code != 200 || be != "one" || !strings.Contains(body, s.want) {
				t.Fatalf("round %d, %s: %d %s %q", i, s.name, code, be, body)
			}
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the backend saw %d connections, want 1 (keep-alive)", n)
	}
}

// TestPlainIOPipelinedWhileServing: requests that arrive one by one while
// an earlier one is being served are all answered, in order.
func TestPlainIOPipelinedWhileServing(t *testing.T) {
	b := startBackend(t, "127.0.0.2", "one", delayed("one"))
	p := startLBD(t, plainConfig(10, 10, b))
	c, br := plainClient(t, p.addr)
	c.Write([]byte("GET /p0?delay=200ms HTTP/1.1\r\nHost: x\r\n\r\n"))
	for i := 1; i < 4; i++ {
		time.Sleep(30 * time.Millisecond)
		fmt.Fprintf(c, "GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
	}
	for i := 0; i < 4; i++ {
		code, _, body := response(t, br, "")
		if code != 200 || !strings.Contains(body, fmt.Sprintf("/p%d", i)) {
			t.Fatalf("response %d: %d %q", i, code, body)
		}
	}
}

// TestPlainIOClientHalfClose: a client that half-closes after its
// request gets the response and then the close, not a wait for the
// Client timeout.
func TestPlainIOClientHalfClose(t *testing.T) {
	b := startBackend(t, "127.0.0.2", "one", delayed("one"))
	p := startLBD(t, plainConfig(10, 10, b))
	for _, delay := range []string{"0s", "100ms"} {
		c, br := plainClient(t, p.addr)
		fmt.Fprintf(c, "GET /h?delay=%s HTTP/1.1\r\nHost: x\r\n\r\n", delay)
		c.(*net.TCPConn).CloseWrite()
		if code, _, _ := response(t, br, ""); code != 200 {
			t.Fatalf("delay %s: status %d", delay, code)
		}
		closedNow(t, br)
	}
}

func TestPlainIOTrickledHeads(t *testing.T) {
	b := startBackend(t, "127.0.0.2", "one", delayed("one"))
	p := startLBD(t, plainConfig(1, 10, b))
	trickle := func(c net.Conn, head string, every time.Duration) {
		for i := 0; i < len(head); i++ {
			if _, err := c.Write([]byte{head[i]}); err != nil {
				return
			}
			time.Sleep(every)
		}
	}
	t.Run("within the Client timeout", func(t *testing.T) {
		c, br := plainClient(t, p.addr)
		for i := 0; i < 3; i++ { // also after a response, on the same connection
			trickle(c, "GET /t HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Millisecond)
			if code, _, body := response(t, br, ""); code != 200 || !strings.Contains(body, "GET /t") {
				t.Fatalf("%d %q", code, body)
			}
		}
	})
	t.Run("longer than the Client timeout", func(t *testing.T) {
		c, br := plainClient(t, p.addr)
		go trickle(c, "GET /t HTTP/1.1\r\nHost: x\r\nX-Pad: "+strings.Repeat("a", 40), 50*time.Millisecond)
		if code, _, _ := response(t, br, ""); code != 408 {
			t.Fatalf("status %d, want 408", code)
		}
	})
}

// TestPlainIOClientTimeout: an idle keep-alive client is closed after
// the Client timeout (1 s), also right after a response.
func TestPlainIOClientTimeout(t *testing.T) {
	b := startBackend(t, "127.0.0.2", "one", delayed("one"))
	p := startLBD(t, plainConfig(1, 10, b))
	c, br := plainClient(t, p.addr)
	c.Write([]byte("GET /i HTTP/1.1\r\nHost: x\r\n\r\n"))
	if code, _, _ := response(t, br, ""); code != 200 {
		t.Fatalf("status %d", code)
	}
	start := time.Now()
	closedNow(t, br)
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("closed after %v, before the Client timeout", d)
	}
}

// TestPlainIOBackendTimes: a backend slower than TimeOut is answered by
// lbd (503, Pound); one slower than the short wait lbd makes before it
// reads anyway, but within TimeOut, is relayed.
func TestPlainIOBackendTimes(t *testing.T) {
	b := startBackend(t, "127.0.0.2", "one", delayed("one"))
	p := startLBD(t, plainConfig(10, 1, b))
	c, br := plainClient(t, p.addr)
	for _, d := range []string{"150ms", "300ms", "600ms", "10ms"} {
		fmt.Fprintf(c, "GET /d?delay=%s HTTP/1.1\r\nHost: x\r\n\r\n", d)
		if code, _, body := response(t, br, ""); code != 200 || !strings.Contains(body, "GET /d?delay="+d) {
			t.Fatalf("delay %s: %d %q", d, code, body)
		}
	}
	c.Write([]byte("GET /d?delay=3s HTTP/1.1\r\nHost: x\r\n\r\n"))
	if code, _, _ := response(t, br, ""); code != 503 {
		t.Fatalf("status %d, want 503 after TimeOut", code)
	}
}

// TestPlainIOLingeringBackend: a backend half-closes each keep-alive
// connection shortly after its response and then reads and drops what
// comes (Apache's lingering close), without a reset. lbd's pooled
// connection is then stale in a way no wait can see; the next request
// must still be answered, on a new connection, well before TimeOut.
func TestPlainIOLingeringBackend(t *testing.T) {
	var n atomic.Int64
	be := connBackend(t, "127.0.0.2", func(c net.Conn) {
		defer c.Close()
		id := n.Add(1)
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Conn: %d\r\n\r\nok", id)
		time.Sleep(20 * time.Millisecond)
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(15 * time.Second))
		io.Copy(io.Discard, br)
	})
	p := startLBD(t, plainConfig(10, 10, be))
	c, br := plainClient(t, p.addr)
	for i := 1; i <= 4; i++ {
		time.Sleep(60 * time.Millisecond) // the FIN has come; the conn sits in the pool
		c.SetReadDeadline(time.Now().Add(4 * time.Second))
		c.Write([]byte("GET /l HTTP/1.1\r\nHost: x\r\n\r\n"))
		code, conn, body := response(t, br, "X-Conn")
		if code != 200 || body != "ok" || conn != fmt.Sprint(i) {
			t.Fatalf("request %d: %d X-Conn %s %q, want 200 on connection %d", i, code, conn, body, i)
		}
	}
}

// bigBody answers /cl/N with N pattern bytes and a Content-Length, and
// /chunked/N with the same bytes chunked.
func bigBody() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		kind := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if len(kind) != 2 {
			http.NotFound(w, r)
			return
		}
		fmt.Sscan(kind[1], &n)
		body := pattern(n)
		if kind[0] == "cl" {
			w.Header().Set("Content-Length", fmt.Sprint(n))
		}
		for len(body) > 0 {
			k := min(len(body), 64<<10)
			w.Write(body[:k])
			if kind[0] == "chunked" {
				w.(http.Flusher).Flush()
			}
			body = body[k:]
		}
	})
}

// pattern is n bytes that differ from any shifted copy of themselves.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// TestPlainIOLargeResponseSlowReader: a response larger than the socket
// buffers, to a client that does not read for a while, fills the client
// socket; the rest must still arrive whole (lbd's first send is partial,
// then it waits for room), and the connection stays usable.
func TestPlainIOLargeResponseSlowReader(t *testing.T) {
	const size = 16 << 20
	b := startBackend(t, "127.0.0.2", "one", bigBody())
	p := startLBD(t, plainConfig(10, 10, b))
	c, br := plainClient(t, p.addr)
	want := pattern(size)
	for _, kind := range []string{"cl", "chunked", "cl"} {
		fmt.Fprintf(c, "GET /%s/%d HTTP/1.1\r\nHost: x\r\n\r\n", kind, size)
		time.Sleep(300 * time.Millisecond) // lbd fills the socket meanwhile
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		code, _, body := response(t, br, "")
		if code != 200 || len(body) != size || body != string(want) {
			t.Fatalf("%s: status %d, %d bytes, intact %v", kind, code, len(body), body == string(want))
		}
	}
}
