package functionaltests

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// echoHandler answers with its name and what it received.
func echoHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Backend", name)
		fmt.Fprintf(w, "%s %s %s\nxff=%s\nbody=%d\nsha=%x\n", name, r.Method, r.RequestURI,
			r.Header.Get("X-Forwarded-For"), len(body), sha256.Sum256(body))
	})
}

func oneService(backends ...*backend) string {
	var b strings.Builder
	b.WriteString("Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 3\nClient 5\nGrace 5\n")
	b.WriteString("ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n\tService\n")
	for _, be := range backends {
		b.WriteString(be.block())
	}
	b.WriteString("\tEnd\nEnd\n")
	return b.String()
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestProxyBalancesAndForwards(t *testing.T) {
	b1 := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	b2 := startBackend(t, "127.0.0.3", "two", echoHandler("two"))
	p := startLBD(t, oneService(b1, b2))
	seen := map[string]int{}
	c := &http.Client{}
	for i := 0; i < 60; i++ {
		resp, body := get(t, c, "http://"+p.addr+"/x?y=1")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		seen[resp.Header.Get("X-Backend")]++
		if !strings.Contains(body, "GET /x?y=1") || !strings.Contains(body, "xff=127.0.0.1") {
			t.Fatalf("backend saw %q", body)
		}
	}
	if seen["one"] == 0 || seen["two"] == 0 {
		t.Fatalf("traffic not balanced: %v", seen)
	}
}

func TestKeepAliveReusedOnBothSides(t *testing.T) {
	var conns atomic.Int64
	b := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	b.srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	p := startLBD(t, oneService(b))
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(c, "GET /k%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("backend saw %d connections for 20 keep-alive requests, want 1", n)
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	b := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBD(t, oneService(b))
	var req bytes.Buffer
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&req, "GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
	}
	fmt.Fprintf(&req, "POST /p5 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
	raw, closed := rawExchange(t, p.addr, req.Bytes(), 3*time.Second)
	if !closed {
		t.Fatal("connection not closed after Connection: close")
	}
	br := bufio.NewReader(bytes.NewReader(raw))
	for i := 0; i < 6; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v\n%s", i, err, raw)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), fmt.Sprintf("/p%d", i)) {
			t.Fatalf("response %d out of order: %s", i, body)
		}
	}
}

func TestLargeChunkedUploadAndDownload(t *testing.T) {
	const size = 10 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	sum := sha256.Sum256(payload)
	b := startBackend(t, "127.0.0.2", "one", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			h := sha256.New()
			n, _ := io.Copy(h, r.Body)
			fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
			return
		}
		w.(http.Flusher).Flush() // no Content-Length: chunked
		for off := 0; off < len(payload); off += 1 << 16 {
			w.Write(payload[off : off+1<<16])
		}
	}))
	p := startLBD(t, oneService(b))
	// Upload with chunked framing (unknown length).
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/up", io.MultiReader(bytes.NewReader(payload)))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("%d %x", size, sum); string(got) != want {
		t.Fatalf("upload: backend got %q, want %q", got, want)
	}
	resp, body := get(t, http.DefaultClient, "http://"+p.addr+"/down")
	if len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("download not chunked: %v", resp.TransferEncoding)
	}
	if sha256.Sum256([]byte(body)) != sum {
		t.Fatalf("download corrupted: %d bytes", len(body))
	}
}

func TestHTTP10ClientAndBodilessResponses(t *testing.T) {
	b := startBackend(t, "127.0.0.2", "one", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(204)
		case "/304":
			w.WriteHeader(304)
		default:
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		}
	}))
	p := startLBD(t, oneService(b))
	cases := []struct {
		name, req string
		want      string
		closed    bool
	}{
		{"http10 closes", "GET / HTTP/1.0\r\n\r\n", "hello", true},
		{"head has no body", "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "", true},
		{"204 no body", "GET /204 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "", true},
		{"304 no body", "GET /304 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, closed := rawExchange(t, p.addr, []byte(tc.req), 3*time.Second)
			if closed != tc.closed {
				t.Fatalf("closed=%v, want %v", closed, tc.closed)
			}
			i := bytes.Index(raw, []byte("\r\n\r\n"))
			if i < 0 {
				t.Fatalf("no head: %q", raw)
			}
			if body := string(raw[i+4:]); body != tc.want {
				t.Fatalf("body %q, want %q (raw %q)", body, tc.want, raw)
			}
		})
	}
}

func TestExpectContinue(t *testing.T) {
	b := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBD(t, oneService(b))
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("no 100 Continue: %q %v", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "data")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "body=4") {
		t.Fatalf("backend did not get the body: %s", body)
	}
}

func TestWebSocketTunnel(t *testing.T) {
	be := rawBackend(t, func(c net.Conn, br *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		io.Copy(c, br) // echo
	})
	p := startLBD(t, oneService(be))
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade failed: %v %v", resp, err)
	}
	io.WriteString(c, "ping-frame")
	got := make([]byte, 10)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping-frame" {
		t.Fatalf("echo through tunnel: %q %v", got, err)
	}
}

func TestBackendKilledMidResponseAbortsClient(t *testing.T) {
	be := rawBackend(t, func(c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+strings.Repeat("x", 400))
	})
	p := startLBD(t, oneService(be))
	resp, err := http.Get("http://" + p.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatal("truncated response looked complete to the client")
	}
}

func TestDialFailureFailsOver(t *testing.T) {
	good := startBackend(t, "127.0.0.2", "good", echoHandler("good"))
	dead := &backend{addr: fmt.Sprintf("127.0.0.3:%d", freePort(t))}
	p := startLBD(t, oneService(dead, good))
	for i := 0; i < 20; i++ {
		resp, body := get(t, http.DefaultClient, "http://"+p.addr+"/")
		if resp.StatusCode != 200 || !strings.HasPrefix(body, "good") {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
}

func TestNoBackendIs503(t *testing.T) {
	dead := &backend{addr: fmt.Sprintf("127.0.0.3:%d", freePort(t))}
	p := startLBD(t, oneService(dead))
	raw, closed := rawExchange(t, p.addr, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 3*time.Second)
	if statusOf(raw) != 503 || !closed {
		t.Fatalf("got %q closed=%v", raw, closed)
	}
}

func TestGracefulStopFinishesInFlight(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var once sync.Once
	b := startBackend(t, "127.0.0.2", "slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		io.WriteString(w, "finished")
	}))
	p := startLBD(t, oneService(b))
	done := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + p.addr + "/slow")
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		done <- string(body)
	}()
	select { // the request is in flight at the backend
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("request never reached the backend")
	}
	p.signal(syscall.SIGHUP)
	// The listener must close (new connects refused) while the request
	// is still in flight; allow lbd up to 5 s to act on the signal.
	refused := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			refused = true
			break
		}
		c.Close()
	}
	if !refused {
		t.Error("listener still accepting 5 s after SIGHUP")
	}
	once.Do(func() { close(release) })
	if got := <-done; got != "finished" {
		t.Fatalf("in-flight request: %q", got)
	}
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.out.String())
	}
}

// TestCloseDelimitedBodyCutShortIsReset: a response framed by the
// backend's close must not look complete when the backend resets the
// connection mid-body; lbd resets the client connection too.
func TestCloseDelimitedBodyCutShortIsReset(t *testing.T) {
	be := rawBackend(t, func(c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"+strings.Repeat("x", 300))
		time.Sleep(50 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0) // the close below is a reset, not a clean end
	})
	p := startLBD(t, oneService(be))
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(c)
	if err == nil {
		t.Fatal("a body cut short by a reset ended like a complete close-delimited body")
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("lbd neither reset nor closed the connection: %v", err)
	}
}
