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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shortPark makes connections park after 20 ms for one test.
func shortPark(t *testing.T) {
	t.Helper()
	if !parking.ready() {
		t.Fatal("the parker did not start")
	}
	after, soon := parkAfter, parkSoon
	parkAfter, parkSoon = 20*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { parkAfter, parkSoon = after, soon })
}

// waitParked waits (bounded) until want of srv's connections are parked
// and none is left in srv.conns: a parked connection keeps no conn.
func waitParked(t *testing.T, srv *Server, want int64) {
	t.Helper()
	for i := 0; ; i++ {
		srv.mu.Lock()
		live := len(srv.conns)
		srv.mu.Unlock()
		parked := srv.parked.Load()
		if parked == want && live == 0 {
			return
		}
		if i == 400 {
			t.Fatalf("%d connections parked and %d not, want %d parked", parked, live, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// parkerRig is a parker of its own (not the server's) with a clock the
// test sets, whose resumed sockets are recorded instead of served.
type parkerRig struct {
	p       *parker
	mu      sync.Mutex
	resumed []int
}

// newParkerRig makes the rig; without loop nothing waits on its epoll
// set, so sockets leave it only by the sweep (or closeServer).
func newParkerRig(t *testing.T, loop bool) *parkerRig {
	t.Helper()
	r := &parkerRig{}
	r.p = &parker{now: time.Now, resume: func(fd int, srv *Server) {
		syscall.EpollCtl(r.p.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
		r.mu.Lock()
		r.resumed = append(r.resumed, fd)
		r.mu.Unlock()
		syscall.Close(fd)
		srv.parkedGone()
	}}
	if !loop {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		r.p.epfd = fd
		t.Cleanup(func() { syscall.Close(fd) })
		return r
	}
	if !r.p.open() {
		t.Fatal("no epoll set")
	}
	t.Cleanup(func() { r.p.file.Close() })
	return r
}

func (r *parkerRig) resumes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.resumed)
}

// parkPair parks the server end of a new loopback connection in r for
// srv (as conn.park does: a copy of the descriptor, the Go side closed)
// and returns the client end.
func (r *parkerRig) parkPair(t *testing.T, srv *Server, since time.Time) (*net.TCPConn, int) {
	t.Helper()
	client, ours := tcpPair(t)
	rc, err := ours.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := dupSocket(rc)
	if err != nil {
		t.Fatal(err)
	}
	ours.Close()
	srv.Active.Add(1)
	srv.parked.Add(1)
	if !r.p.park(fd, srv, since) {
		t.Fatal("not parked")
	}
	return client.(*net.TCPConn), fd
}

// closedByPeer reports whether the proxy end of c was closed (EOF or a
// reset within a short wait) rather than left open.
func closedByPeer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !strings.Contains(err.Error(), "timeout")
}

// TestParkerExpire: the sweep ends a parked connection once its
// listener's Client timeout has passed since the last read, never
// before and at most two ticks (parkTick) after; one whose request came
// meanwhile is served, not closed; a Client timeout of 0 never ends one.
// The clock is the test's.
func TestParkerExpire(t *testing.T) {
	const tick = time.Duration(parkTick)
	const years5 = 5 * 365 * 24 * time.Hour
	cases := []struct {
		name    string
		client  time.Duration
		offset  time.Duration // the last read, after a whole second
		idle    time.Duration // clock at the sweep minus the last read
		request bool          // the client sent a request before the sweep
		want    string        // "kept", "closed" or "served"
	}{
		{name: "before the timeout", client: 10 * time.Second, idle: 9 * time.Second, want: "kept"},
		{name: "in the tick it parked in", client: 10 * time.Second, offset: 1, idle: 0, want: "kept"},
		{name: "at the timeout", client: 10 * time.Second, idle: 10 * time.Second, want: "closed"},
		{name: "a nanosecond early", client: 10 * time.Second, idle: 10*time.Second - 1, want: "kept"},
		{name: "a nanosecond early, mid-tick", client: 10 * time.Second, offset: tick / 2, idle: 10*time.Second - 1, want: "kept"},
		{name: "a nanosecond early, just past a tick", client: 10 * time.Second, offset: 1, idle: 10*time.Second - 1, want: "kept"},
		{name: "two ticks late, just past a tick", client: 10 * time.Second, offset: 1, idle: 10*time.Second + 2*tick, want: "closed"},
		{name: "a timeout between ticks, a nanosecond early", client: 10*time.Second + tick/3, offset: tick - 1, idle: 10*time.Second + tick/3 - 1, want: "kept"},
		{name: "a timeout between ticks, two ticks late", client: 10*time.Second + tick/3, offset: tick - 1, idle: 10*time.Second + tick/3 + 2*tick, want: "closed"},
		{name: "long after", client: 10 * time.Second, idle: time.Hour, want: "closed"},
		{name: "no Client timeout", client: 0, idle: time.Hour, want: "kept"},
		{name: "a Client timeout of five years, an hour idle", client: years5, idle: time.Hour, want: "kept"},
		{name: "a request came as it timed out", client: 10 * time.Second, idle: 10 * time.Second, request: true, want: "served"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// No loop: the sweep meets a request before its event is
			// handled, as when both happen at once.
			r := newParkerRig(t, false)
			srv := NewServer(&Listener{Client: tc.client})
			base := time.Unix(1_000_000, 0).Add(tc.offset)
			client, fd := r.parkPair(t, srv, base)
			if tc.request {
				if _, err := client.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
					t.Fatal(err)
				}
				waitFor(t, func() bool { return pending(fd) > 0 })
			}
			left := r.p.expire(base.Add(tc.idle))
			waitFor(t, func() bool { return tc.want != "served" || r.resumes() == 1 })
			got := "kept"
			switch {
			case r.resumes() == 1:
				got = "served"
			case srv.Active.Load() == 0:
				got = "closed"
			}
			if got != tc.want {
				t.Fatalf("connection %s, want %s", got, tc.want)
			}
			if wantLeft := map[bool]int{true: 1, false: 0}[tc.want == "kept"]; left != wantLeft {
				t.Fatalf("expire says %d stay parked, want %d", left, wantLeft)
			}
			if closed := closedByPeer(client); closed != (tc.want != "kept") {
				t.Fatalf("client end closed: %v (connection %s)", closed, got)
			}
		})
	}
}

// TestParkerWakes: a request wakes a parked socket; a peer that closes
// (FIN or reset) is reaped at once, not at its timeout; a request sent
// with a FIN is served; Close takes only its own server's sockets; and
// a socket parked as its server closes is ended rather than kept.
func TestParkerWakes(t *testing.T) {
	cases := []struct {
		name        string
		act         func(t *testing.T, r *parkerRig, srv, other *Server, c *net.TCPConn)
		wantResumed int
		wantActive  int64 // srv's connections left
	}{
		{name: "request", wantResumed: 1, act: func(t *testing.T, r *parkerRig, srv, other *Server, c *net.TCPConn) {
			c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		}},
		{name: "peer closes", act: func(t *testing.T, r *parkerRig, srv, other *Server, c *net.TCPConn) {
			c.Close()
		}},
		{name: "peer resets", act: func(t *testing.T, r *parkerRig, srv, other *Server, c *net.TCPConn) {
			c.SetLinger(0)
			c.Close()
		}},
		{name: "request then FIN", wantResumed: 1, act: func(t *testing.T, r *parkerRig, srv, other *Server, c *net.TCPConn) {
			c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
			c.CloseWrite()
		}},
		{name: "another server closes", wantActive: 1, act: func(t *testing.T, r *parkerRig, srv, other *Server, c *net.TCPConn) {
			r.p.closeServer(other)
		}},
		{name: "its server closes", act: func(t *testing.T, r *parkerRig, srv, other *Server, c *net.TCPConn) {
			r.p.closeServer(srv)
		}},
		{name: "parked after Close began", act: func(t *testing.T, r *parkerRig, srv, other *Server, c *net.TCPConn) {
			srv.closed.Store(true)
			r.parkPair(t, srv, time.Now()) // ended: only the first is left
		}, wantActive: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newParkerRig(t, true)
			srv := NewServer(&Listener{Client: time.Hour})
			other := NewServer(&Listener{Client: time.Hour})
			c, _ := r.parkPair(t, srv, time.Now())
			r.parkPair(t, other, time.Now())
			tc.act(t, r, srv, other, c)
			waitFor(t, func() bool { return srv.Active.Load() == tc.wantActive && r.resumes() == tc.wantResumed })
		})
	}
}

// TestParkerIgnoresStaleEvents: an event whose registration is not the
// row's (an earlier socket with the same descriptor) takes nothing.
func TestParkerIgnoresStaleEvents(t *testing.T) {
	r := newParkerRig(t, false)
	srv := NewServer(&Listener{Client: time.Hour})
	_, fd := r.parkPair(t, srv, time.Now())
	gen := r.p.rows[fd].gen
	if got := r.p.take(fd, gen-1); got != nil {
		t.Fatal("an earlier registration's event took the row")
	}
	if got := r.p.take(fd+1000, gen); got != nil {
		t.Fatal("an event for a descriptor beyond the table took a row")
	}
	if got := r.p.take(fd, gen); got != srv {
		t.Fatalf("the row's own event took %p, want its server %p", got, srv)
	}
	syscall.Close(fd)
}

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
	send := func(s string) {
		t.Helper()
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	for i, step := range []struct {
		name  string
		parts []string
		paths []string
	}{
		{"first request", []string{"GET /one HTTP/1.1\r\nHost: x\r\n\r\n"}, []string{"/one"}},
		{"after parking", []string{"GET /two HTTP/1.1\r\nHost: x\r\n\r\n"}, []string{"/two"}},
		{"pipelined pair", []string{"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"}, []string{"/a", "/b"}},
		{"head in pieces", []string{"GET /slow HT", "TP/1.1\r\nHost: x\r\n\r\n"}, []string{"/slow"}},
		{"body", []string{"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", "abc"}, []string{"/p"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			if i > 0 {
				waitParked(t, srv, 1)
			}
			for _, p := range step.parts {
				send(p)
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
