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
	"os"
	"syscall"
	"testing"
	"time"
)

// The parker through a Server: when connections park, what they keep
// doing while parked, and what a park and resume costs.

// TestParkDelay: a connection is parked after parkAfter, or after
// parkSoon while more than parkCrowd of its listener's connections are
// open and not parked.
func TestParkDelay(t *testing.T) {
	cases := []struct {
		name           string
		active, parked int64
		want           time.Duration
	}{
		{name: "one connection", active: 1, want: parkAfter},
		{name: "a crowd, all but a few parked", active: 10 * parkCrowd, parked: 10*parkCrowd - 5, want: parkAfter},
		{name: "exactly parkCrowd waiting", active: parkCrowd + 7, parked: 7, want: parkAfter},
		{name: "more than parkCrowd waiting", active: parkCrowd + 8, parked: 7, want: parkSoon},
		{name: "a crowd, none parked", active: 5 * parkCrowd, want: parkSoon},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(&Listener{})
			srv.Active.Store(tc.active)
			srv.parked.Store(tc.parked)
			if got := srv.parkDelay(); got != tc.want {
				t.Fatalf("parkDelay = %v, want %v", got, tc.want)
			}
		})
	}
}

// waitFor polls cond (bounded: 2 s).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 400 {
			t.Fatal("condition not reached in 2 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIdleConnectionParks: a keep-alive connection idle for parkAfter
// is parked (no conn, no goroutine); its next request, a pipelined
// pair, a request that comes in pieces and one with a body are served
// as ever, and it parks again after each.
func TestIdleConnectionParks(t *testing.T) {
	shortPark(t)
	srv, addr := rawServer(t, httpBackend(t, echoPath), 30*time.Second, 30*time.Second)
	c, br := dialRaw(t, addr)
	runParkSteps(t, srv, c, br, []parkStep{
		{name: "first request", parts: []string{"GET /one HTTP/1.1\r\nHost: x\r\n\r\n"}, paths: []string{"/one"}},
		{name: "after parking", parts: []string{"GET /two HTTP/1.1\r\nHost: x\r\n\r\n"}, paths: []string{"/two"}},
		{name: "pipelined pair", parts: []string{"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"}, paths: []string{"/a", "/b"}},
		{name: "head in pieces", parts: []string{"GET /slow HT", "TP/1.1\r\nHost: x\r\n\r\n"}, paths: []string{"/slow"}},
		{name: "body", parts: []string{"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", "abc"}, paths: []string{"/p"}},
	})
}

// parkStep is one request of a parking test: written in parts, 5 ms
// apart, and answered once for each of paths (an echoPath backend);
// before, when set, runs first.
type parkStep struct {
	name         string
	parts, paths []string
	before       func(t *testing.T)
}

// runParkSteps sends each step on c, from the second on once the
// connection is parked, checks the answers, and that the connection ends
// parked and still counted as open, once.
func runParkSteps(t *testing.T, srv *Server, c net.Conn, br *bufio.Reader, steps []parkStep) {
	t.Helper()
	for i, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if i > 0 {
				waitParked(t, srv, 1)
			}
			if step.before != nil {
				step.before(t)
			}
			for _, p := range step.parts {
				if _, err := c.Write([]byte(p)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Millisecond)
			}
			for _, path := range step.paths {
				if code, body := readBody(t, br); code != 200 || !bytes.Contains([]byte(body), []byte(" "+path+" ")) {
					t.Fatalf("got %d %q, want 200 for %s", code, body, path)
				}
			}
		})
	}
	waitParked(t, srv, 1)
	if n := srv.Active.Load(); n != 1 {
		t.Fatalf("Active = %d with one parked connection, want 1", n)
	}
}

// TestParkedClientsInterleaved: two clients from different addresses,
// parked and resumed in turn on pooled conn structures, each get their
// own answers and their own address in X-Forwarded-For, every time.
func TestParkedClientsInterleaved(t *testing.T) {
	shortPark(t)
	be := httpBackend(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.URL.Path, r.Header.Get("X-Forwarded-For"))
	})
	srv, addr := rawServer(t, be, 30*time.Second, 30*time.Second)
	type client struct {
		from string
		c    net.Conn
		br   *bufio.Reader
	}
	var clients []client
	for _, from := range []string{"127.0.0.2", "127.0.0.3"} {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		clients = append(clients, client{from, c, bufio.NewReader(c)})
	}
	for round := range 6 {
		for i, cl := range clients {
			path := fmt.Sprintf("/r%d-c%d", round, i)
			if _, err := fmt.Fprintf(cl.c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
				t.Fatal(err)
			}
			if code, body := readBody(t, cl.br); code != 200 || body != path+" "+cl.from {
				t.Fatalf("round %d, client %s: %d %q, want %q", round, cl.from, code, body, path+" "+cl.from)
			}
		}
		if round%2 == 0 {
			waitParked(t, srv, 2) // every other round, both resume from the parker
		}
	}
}

// TestParkedConnectionTimesOut: the Client timeout still ends a parked
// connection (silently, as Pound does), counted from its last request,
// and Server.Close ends one at once.
func TestParkedConnectionTimesOut(t *testing.T) {
	shortPark(t)
	srv, addr := rawServer(t, httpBackend(t, echoPath), 300*time.Millisecond, 30*time.Second)
	c, br := dialRaw(t, addr)
	if _, err := c.Write([]byte("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	readBody(t, br)
	start := time.Now()
	waitParked(t, srv, 1)
	wantEOF(t, br)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("closed after %v, want about the 300 ms Client timeout", d)
	}
	waitNoConns(t, srv)

	srv2, addr2 := rawServer(t, httpBackend(t, echoPath), 30*time.Second, 30*time.Second)
	c2, br2 := dialRaw(t, addr2)
	if _, err := c2.Write([]byte("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	readBody(t, br2)
	waitParked(t, srv2, 1)
	srv2.Close()
	wantEOF(t, br2)
	waitNoConns(t, srv2)
}

// TestParkedConnectionsShutdownAndDrain: Shutdown (Grace) closes parked
// connections at once; Drain (binary upgrade) waits for them, answers a
// request on one with "Connection: close", and returns when they are
// gone.
func TestParkedConnectionsShutdownAndDrain(t *testing.T) {
	shortPark(t)
	t.Run("shutdown", func(t *testing.T) {
		srv, addr := rawServer(t, httpBackend(t, echoPath), 30*time.Second, 30*time.Second)
		c, br := dialRaw(t, addr)
		c.Write([]byte("GET /one HTTP/1.1\r\nHost: x\r\n\r\n"))
		readBody(t, br)
		waitParked(t, srv, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		wantEOF(t, br)
		waitNoConns(t, srv)
	})
	t.Run("drain", func(t *testing.T) {
		srv, addr := rawServer(t, httpBackend(t, echoPath), 30*time.Second, 30*time.Second)
		c, br := dialRaw(t, addr)
		c.Write([]byte("GET /one HTTP/1.1\r\nHost: x\r\n\r\n"))
		readBody(t, br)
		waitParked(t, srv, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		drained := make(chan error, 1)
		go func() { drained <- srv.Drain(ctx) }()
		time.Sleep(50 * time.Millisecond)
		select {
		case err := <-drained:
			t.Fatalf("Drain returned (%v) with a parked connection open", err)
		default:
		}
		c.Write([]byte("GET /two HTTP/1.1\r\nHost: x\r\n\r\n"))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 || !resp.Close {
			t.Fatalf("%d, close %v: want 200 with Connection: close", resp.StatusCode, resp.Close)
		}
		wantEOF(t, br)
		if err := <-drained; err != nil {
			t.Fatalf("Drain: %v", err)
		}
	})
}

// TestParkingAllocations: a request on a parked connection (resume,
// serve, park again) allocates what a new connection's first request
// does: the net.TCPConn and os.File of net.FileConn, their addresses,
// the resume goroutine, and the *net.OpError in which RawConn.Read
// reports that parkDelay's deadline passed. A busy connection does not
// park (TestRawLoopDoesNotAllocate), so this is at most once per
// parkDelay of idleness per connection.
func TestParkingAllocations(t *testing.T) {
	shortPark(t)
	srv, addr := rawServer(t, quietBackend(t), 30*time.Second, 30*time.Second)
	c, _ := dialRaw(t, addr)
	c.SetReadDeadline(time.Time{})
	req := []byte("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
	buf := make([]byte, 4096)
	roundTrip := func() {
		waitParked(t, srv, 1)
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
	for i := 0; i < 5; i++ { // warm the pools (a new connection parks too)
		roundTrip()
	}
	before := parking.parks.Load()
	allocs := testing.AllocsPerRun(20, roundTrip)
	t.Logf("%.1f allocations per parked request", allocs)
	if allocs > parkAllocs && !raceEnabled {
		t.Fatalf("%.2f allocations per parked request, want at most %d", allocs, parkAllocs)
	}
	if parks := parking.parks.Load() - before; parks < 21 {
		t.Fatalf("%d parks in 21 requests: the connection did not park between them", parks)
	}
}

// parkAllocs bounds TestParkingAllocations (17 measured: see its log).
const parkAllocs = 17

// BenchmarkParkCycle: the system calls and allocations of one park and
// resume outside the request path, as conn.park and resumeParked make
// them: a copy of the descriptor, the net.Conn closed, into the parker's
// epoll set and out, and a net.Conn again (net.FileConn) with its
// addresses read and a read deadline.
func BenchmarkParkCycle(b *testing.B) {
	_, nc := tcpPair(b)
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(ep)
	b.ReportAllocs()
	for b.Loop() {
		rc, err := nc.(*net.TCPConn).SyscallConn()
		if err != nil {
			b.Fatal(err)
		}
		fd, err := dupSocket(rc)
		if err != nil {
			b.Fatal(err)
		}
		nc.Close()
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			b.Fatal(err)
		}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, fd, nil); err != nil {
			b.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "")
		if nc, err = net.FileConn(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
		_ = nc.RemoteAddr().String()
		nc.SetReadDeadline(time.Now().Add(time.Second))
	}
	nc.Close()
}

// TestResumeParkedEnds: a parked socket woken by bytes ends cleanly,
// counted out and unserved, when its client reset it before the resume
// (net.FileConn then returns a conn without a remote address) or when
// its server was closed meanwhile (Close had not seen it).
func TestResumeParkedEnds(t *testing.T) {
	cases := []struct {
		name string
		act  func(t *testing.T, srv *Server, c *net.TCPConn, fd int)
	}{
		{name: "client reset after its request", act: func(t *testing.T, srv *Server, c *net.TCPConn, fd int) {
			c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
			c.SetLinger(0)
			c.Close()
			waitFor(t, func() bool { _, err := syscall.Getpeername(fd); return err != nil })
		}},
		{name: "server closed meanwhile", act: func(t *testing.T, srv *Server, c *net.TCPConn, fd int) {
			c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
			srv.closed.Store(true)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newParkerRig(t, false)
			srv := NewServer(&Listener{Client: time.Hour})
			c, fd := r.parkPair(t, srv, time.Now())
			tc.act(t, srv, c, fd)
			if r.p.take(fd, r.p.rows[fd].gen) != srv {
				t.Fatal("the row was not there to take")
			}
			resumeParked(fd, srv)
			if a, p := srv.Active.Load(), srv.parked.Load(); a != 0 || p != 0 {
				t.Errorf("after the resume: %d open, %d parked; want 0 and 0", a, p)
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if got, err := io.ReadAll(c); len(got) != 0 {
				t.Errorf("the client got %q (%v), want nothing", got, err)
			}
		})
	}
}
