//go:build linux

package proxy

import (
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
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

// TestParkedRowSize: a parked connection's row is all it costs lbd
// (bench/RESULTS.md §44): 16 bytes on a 64-bit system.
func TestParkedRowSize(t *testing.T) {
	if got := unsafe.Sizeof(parkedConn{}); unsafe.Sizeof(uintptr(0)) == 8 && got != 16 {
		t.Fatalf("parkedConn is %d bytes, want 16", got)
	}
}
