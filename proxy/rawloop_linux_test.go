//go:build linux

package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"lbd/backend"
	"lbd/balancer"
)

// rawServer serves st over loopback with one backend at beAddr; the
// client timeout is client, the backend's timeout timeout.
func rawServer(t *testing.T, beAddr string, client, timeout time.Duration) (*Server, string) {
	t.Helper()
	srv, addr, _ := rawServerBackend(t, beAddr, client, timeout)
	return srv, addr
}

// rawServerBackend is rawServer that also returns the backend.
func rawServerBackend(t *testing.T, beAddr string, client, timeout time.Duration) (*Server, string, *backend.Backend) {
	t.Helper()
	srv, ln, b, algo := serveOneBackend(t, beAddr, client, timeout)
	serveTest(t, srv, ln, b, algo)
	return srv, ln.Addr().String(), b
}

// serveTest serves ln until the test ends, then closes the server and
// waits for its connections, and lets the backend's go.
func serveTest(t *testing.T, srv *Server, ln net.Listener, b *backend.Backend, algo *balancer.Balancer) {
	t.Helper()
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
		waitNoConns(t, srv)
		algo.Close()
		b.CloseIdle()
	})
}

// waitNoConns waits (bounded) until every client connection has ended.
func waitNoConns(t *testing.T, srv *Server) {
	t.Helper()
	for i := 0; srv.Active.Load() != 0; i++ {
		if i == 1000 {
			t.Fatalf("%d connections still open", srv.Active.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// httpBackend serves h on loopback and returns its address.
func httpBackend(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// echoPath answers with the request's method, path and body size, after
// the delay a "delay" query parameter names (cut short when the proxy
// gives up: no handler outlives its test).
func echoPath(w http.ResponseWriter, r *http.Request) {
	if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s %d", r.Method, r.URL.Path, len(body))
}

// dialRaw connects to addr; reads fail after 5 s, far below any timeout
// the tests wait for, so a hang shows as a deadline error.
func dialRaw(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

// readBody reads one response and returns its status and body.
func readBody(t *testing.T, br *bufio.Reader) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading a body: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// wantEOF checks that the proxy closed the connection (within the read
// deadline: it did not wait for a timeout).
func wantEOF(t *testing.T, br *bufio.Reader) {
	t.Helper()
	if b, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("want the connection closed, got %q, %v", b, err)
	}
}

func onRawLoop(t *testing.T, srv *Server) {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.conns) == 0 {
		t.Fatal("no connection")
	}
	for c := range srv.conns {
		if !c.rawOn() {
			t.Fatal("a plain TCP connection is not on the raw loop")
		}
	}
}

func TestRawLoop(t *testing.T) {
	tests := []struct {
		name string
		// client (seconds) and backend timeouts
		client, timeout time.Duration
		run             func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader)
	}{
		{name: "keep-alive", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
			for i := 0; i < 50; i++ {
				fmt.Fprintf(c, "GET /k%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
				if code, body := readBody(t, br); code != 200 || body != fmt.Sprintf("GET /k%d 0", i) {
					t.Fatalf("request %d: %d %q", i, code, body)
				}
			}
			onRawLoop(t, srv)
		}},
		{name: "pipelined in one write", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
			var req bytes.Buffer
			for i := 0; i < 5; i++ {
				fmt.Fprintf(&req, "GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
			}
			req.WriteString("POST /p5 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
			c.Write(req.Bytes())
			for i := 0; i < 6; i++ {
				want := fmt.Sprintf("GET /p%d 0", i)
				if i == 5 {
					want = "POST /p5 3"
				}
				if code, body := readBody(t, br); code != 200 || body != want {
					t.Fatalf("response %d: %d %q, want %q", i, code, body, want)
				}
			}
			wantEOF(t, br)
		}},
		{
			// The second request arrives while the first is served:
			// the loop must read it, not wait for an edge that came.
			name: "pipelined while the first is served", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
				fmt.Fprintf(c, "GET /a?delay=100ms HTTP/1.1\r\nHost: x\r\n\r\n")
				time.Sleep(30 * time.Millisecond)
				fmt.Fprintf(c, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
				for _, want := range []string{"GET /a 0", "GET /b 0"} {
					if code, body := readBody(t, br); code != 200 || body != want {
						t.Fatalf("%d %q, want %q", code, body, want)
					}
				}
			},
		},
		{
			// A FIN that comes with the request: after the response the
			// connection closes, without waiting for the client timeout.
			name: "request then half-close", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
				c.Write([]byte("GET /h HTTP/1.1\r\nHost: x\r\n\r\n"))
				c.(*net.TCPConn).CloseWrite()
				if code, body := readBody(t, br); code != 200 || body != "GET /h 0" {
					t.Fatalf("%d %q", code, body)
				}
				wantEOF(t, br)
			},
		},
		{name: "head in pieces", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
			for _, b := range []byte("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n") {
				c.Write([]byte{b})
				time.Sleep(2 * time.Millisecond)
			}
			if code, body := readBody(t, br); code != 200 || body != "GET /slow 0" {
				t.Fatalf("%d %q", code, body)
			}
		}},
		{name: "head slower than the client timeout", client: 300 * time.Millisecond,
			run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
				for _, b := range []byte("GET /slow HTTP/1.1\r\nHost: x\r\n") {
					if _, err := c.Write([]byte{b}); err != nil {
						break
					}
					time.Sleep(25 * time.Millisecond)
				}
				if code, _ := readBody(t, br); code != 408 {
					t.Fatalf("status %d, want 408", code)
				}
			}},
		{name: "idle past the client timeout", client: 300 * time.Millisecond,
			run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
				c.Write([]byte("GET /i HTTP/1.1\r\nHost: x\r\n\r\n"))
				if code, _ := readBody(t, br); code != 200 {
					t.Fatalf("status %d", code)
				}
				wantEOF(t, br) // after the 300 ms, well within the 5 s read deadline
			}},
		{name: "backend slower than WriteRead's bounded wait", timeout: 5 * time.Second,
			run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
				for _, d := range []string{"150ms", "200ms", "250ms"} {
					fmt.Fprintf(c, "GET /d?delay=%s HTTP/1.1\r\nHost: x\r\n\r\n", d)
					if code, body := readBody(t, br); code != 200 || body != "GET /d 0" {
						t.Fatalf("delay %s: %d %q", d, code, body)
					}
				}
			}},
		{name: "backend timeout", timeout: 300 * time.Millisecond,
			run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
				c.Write([]byte("GET /t?delay=2s HTTP/1.1\r\nHost: x\r\n\r\n"))
				if code, _ := readBody(t, br); code != 503 {
					t.Fatalf("status %d, want 503 (Pound: a backend timeout)", code)
				}
			}},
		{name: "body with the head", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
			c.Write([]byte("POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"))
			if code, body := readBody(t, br); code != 200 || body != "POST /b 5" {
				t.Fatalf("%d %q", code, body)
			}
		}},
		{name: "body after the head", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
			c.Write([]byte("POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"))
			time.Sleep(30 * time.Millisecond)
			c.Write([]byte("hello"))
			if code, body := readBody(t, br); code != 200 || body != "POST /b 5" {
				t.Fatalf("%d %q", code, body)
			}
			fmt.Fprintf(c, "GET /after HTTP/1.1\r\nHost: x\r\n\r\n") // back on the loop
			if code, body := readBody(t, br); code != 200 || body != "GET /after 0" {
				t.Fatalf("%d %q", code, body)
			}
		}},
		{name: "chunked body", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
			c.Write([]byte("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"))
			if code, body := readBody(t, br); code != 200 || body != "POST /c 5" {
				t.Fatalf("%d %q", code, body)
			}
		}},
		{name: "expect 100-continue", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
			c.Write([]byte("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"))
			line, err := br.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
				t.Fatalf("got %q, %v; want 100 Continue", line, err)
			}
			br.ReadString('\n')
			c.Write([]byte("hello"))
			if code, body := readBody(t, br); code != 200 || body != "POST /e 5" {
				t.Fatalf("%d %q", code, body)
			}
		}},
		{name: "shutdown closes an idle connection", run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
			c.Write([]byte("GET /s HTTP/1.1\r\nHost: x\r\n\r\n"))
			if code, _ := readBody(t, br); code != 200 {
				t.Fatalf("status %d", code)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			wantEOF(t, br)
		}},
		{
			// Close must not wait for a request served inside the
			// loop's read callback (the read lock is held there).
			name: "close during a slow request", timeout: 10 * time.Second,
			run: func(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader) {
				c.Write([]byte("GET /slow?delay=1s HTTP/1.1\r\nHost: x\r\n\r\n"))
				time.Sleep(100 * time.Millisecond)
				closed := make(chan struct{})
				go func() { srv.Close(); close(closed) }()
				select {
				case <-closed:
				case <-time.After(500 * time.Millisecond):
					t.Fatal("Close waited for the request in flight")
				}
				if _, err := br.ReadByte(); err == nil {
					t.Fatal("connection still answers after Close")
				}
			},
		},
	}
	beAddr := httpBackend(t, echoPath)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, timeout := tc.client, tc.timeout
			if client == 0 {
				client = 30 * time.Second
			}
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			srv, addr := rawServer(t, beAddr, client, timeout)
			c, br := dialRaw(t, addr)
			tc.run(t, srv, c, br)
		})
	}
}

// TestClientGoneKeepsBackendConn: a client that leaves while its request
// is at the backend costs no backend connection: the complete response
// leaves it fit for the pool.
func TestClientGoneKeepsBackendConn(t *testing.T) {
	_, addr, b := rawServerBackend(t, httpBackend(t, echoPath), 30*time.Second, 30*time.Second)
	c, _ := dialRaw(t, addr)
	c.Write([]byte("GET /gone?delay=100ms HTTP/1.1\r\nHost: x\r\n\r\n"))
	time.Sleep(20 * time.Millisecond) // the request is at the backend
	c.(*net.TCPConn).SetLinger(0)
	c.Close() // a reset: the proxy's write of the response fails
	for i := 0; b.Idle() != 1; i++ {
		if i == 500 {
			t.Fatalf("%d idle backend connections, want the one the request used", b.Idle())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := b.Active(); n != 0 {
		t.Fatalf("%d backend connections still checked out", n)
	}
}

// rawAnswer is what the allocation test's backend sends back.
const rawAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// quietBackend answers every request head with rawAnswer and allocates
// nothing per request (AllocsPerRun counts the whole process).
func quietBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				out := []byte(rawAnswer)
				n := 0
				for {
					k, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += k
					if bytes.HasSuffix(buf[:n], []byte("\r\n\r\n")) {
						n = 0
						c.Write(out)
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestRawLoopDoesNotAllocate(t *testing.T) {
	srv, addr := rawServer(t, quietBackend(t), 30*time.Second, 30*time.Second)
	c, _ := dialRaw(t, addr)
	c.SetReadDeadline(time.Time{})
	req := []byte("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
	buf := make([]byte, 4096)
	roundTrip := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		n := 0
		for !bytes.HasSuffix(buf[:n], []byte("\r\n\r\nok")) {
			k, err := c.Read(buf[n:])
			if err != nil {
				t.Fatalf("after %q: %v", buf[:n], err)
			}
			n += k
		}
	}
	for i := 0; i < 10; i++ { // warm the pools
		roundTrip()
	}
	onRawLoop(t, srv)
	if allocs := testing.AllocsPerRun(500, roundTrip); allocs != 0 {
		t.Fatalf("%.2f allocations per request, want 0", allocs)
	}
}
