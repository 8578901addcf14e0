package backend

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPoolReuse(t *testing.T) {
	t.Parallel()
	b := pipeBackend(t, Options{MaxIdle: 2})
	if _, ok := b.Get(); ok {
		t.Fatal("Get on an empty pool returned a conn")
	}
	c, err := b.Dial(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Active() != 1 || c.Reused() || c.Backend() != b {
		t.Fatalf("after Dial: active %d reused %v", b.Active(), c.Reused())
	}
	b.Put(c)
	if b.Active() != 0 || b.Idle() != 1 {
		t.Fatalf("after Put: active %d idle %d, want 0 1", b.Active(), b.Idle())
	}
	b.Put(c) // double Put must not double-release
	if b.Active() != 0 || b.Idle() != 1 {
		t.Fatalf("after double Put: active %d idle %d, want 0 1", b.Active(), b.Idle())
	}
	got, ok := b.Get()
	if !ok || got != c || !got.Reused() || got.Reuses() != 1 || b.Active() != 1 || b.Idle() != 0 {
		t.Fatalf("Get: ok %v same %v reuses %d active %d idle %d", ok, got == c, got.Reuses(), b.Active(), b.Idle())
	}
	got.Close()
	got.Close() // idempotent
	if b.Active() != 0 {
		t.Errorf("active after Close = %d, want 0", b.Active())
	}
}

func TestPoolIsLIFOAndBounded(t *testing.T) {
	t.Parallel()
	b := pipeBackend(t, Options{MaxIdle: 2})
	var cs []*Conn
	for range 3 {
		c, err := b.Dial(time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		b.Put(c)
	}
	if b.Idle() != 2 || b.Active() != 0 {
		t.Fatalf("idle %d active %d, want 2 0", b.Idle(), b.Active())
	}
	if _, err := cs[2].Conn.Write([]byte("x")); err == nil {
		t.Error("the conn that did not fit was not closed")
	}
	first, _ := b.Get()
	second, _ := b.Get()
	if first != cs[1] || second != cs[0] {
		t.Errorf("Get order is not most-recent first")
	}
	first.Close()
	second.Close()
}

func TestPutClosesWhenUnusable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		o     Options
		state func(*Backend)
	}{
		{name: "pool disabled", o: Options{MaxIdle: -1}, state: func(*Backend) {}},
		{name: "backend disabled", state: func(b *Backend) { b.SetEnabled(false) }},
		{name: "backend dead", state: func(b *Backend) { b.SetAlive(false, "test") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := pipeBackend(t, tc.o)
			c, err := b.Dial(time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			tc.state(b)
			b.Put(c)
			if b.Idle() != 0 || b.Active() != 0 {
				t.Errorf("idle %d active %d, want 0 0", b.Idle(), b.Active())
			}
			if _, err := c.Conn.Write([]byte("x")); err == nil {
				t.Error("conn left open")
			}
		})
	}
}

func TestFlipDrainsPool(t *testing.T) {
	t.Parallel()
	flips := []struct {
		name string
		flip func(*Backend)
	}{
		{name: "dead", flip: func(b *Backend) { b.SetAlive(false, "test") }},
		{name: "disabled", flip: func(b *Backend) { b.SetEnabled(false) }},
	}
	for _, tc := range flips {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := pipeBackend(t, Options{})
			c, _ := b.Dial(time.Time{})
			b.Put(c)
			tc.flip(b)
			if b.Idle() != 0 {
				t.Errorf("idle = %d after flip, want 0", b.Idle())
			}
		})
	}
}

func TestExpiredIdleConns(t *testing.T) {
	t.Parallel()
	b := pipeBackend(t, Options{IdleTimeout: time.Minute})
	old, _ := b.Dial(time.Time{})
	fresh, _ := b.Dial(time.Time{})
	b.Put(old)
	b.Put(fresh)
	old.idleSince.Store(monoNow() - int64(2*time.Minute))
	if n := b.ReapIdle(); n != 1 || b.Idle() != 1 {
		t.Fatalf("ReapIdle closed %d, idle %d; want 1 1", n, b.Idle())
	}
	got, ok := b.Get()
	if !ok || got != fresh {
		t.Fatal("fresh conn not returned")
	}
	// An expired conn found by Get is closed and skipped.
	b.Put(got)
	got.idleSince.Store(monoNow() - int64(2*time.Minute))
	if _, ok := b.Get(); ok || b.Idle() != 0 {
		t.Errorf("Get returned an expired conn (idle %d)", b.Idle())
	}
}

func TestDialFailureKillsBackend(t *testing.T) {
	t.Parallel()
	refused := errors.New("connection refused")
	tests := []struct {
		name      string
		noPassive bool
		alive     bool
	}{
		{name: "Pound kills on dial failure", alive: false},
		{name: "zproxy leaves it to the monitor", noPassive: true, alive: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lg, buf := testLogger()
			b := New(Options{Address: "10.0.0.9:80", Logger: lg, NoPassiveDown: tc.noPassive,
				DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, refused }})
			_, err := b.Dial(time.Time{})
			var de *DialError
			if !errors.As(err, &de) || de.Backend != b || !errors.Is(err, refused) {
				t.Fatalf("err = %v, want DialError wrapping refused", err)
			}
			if !strings.Contains(err.Error(), "10.0.0.9:80") {
				t.Errorf("error %q does not name the backend", err)
			}
			if b.Alive() != tc.alive || b.Pending() != 0 || b.Active() != 0 {
				t.Errorf("alive %v pending %d active %d", b.Alive(), b.Pending(), b.Active())
			}
			if !tc.alive && buf.count("Backend 10.0.0.9:80 dead (connection refused)") != 1 {
				t.Errorf("missing dead log line:\n%s", buf)
			}
		})
	}
}

func TestDialTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		connTO   time.Duration
		deadline time.Time
		alive    bool
	}{
		{name: "ConnTO expiry kills (Pound)", connTO: time.Nanosecond, alive: false},
		{name: "caller deadline expiry does not", connTO: time.Hour, deadline: time.Now().Add(-time.Second), alive: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lg, _ := testLogger()
			b := New(Options{Address: "10.0.0.1:80", ConnTO: tc.connTO, Logger: lg,
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				}})
			if _, err := b.Dial(tc.deadline); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want a deadline error", err)
			}
			if b.Alive() != tc.alive {
				t.Errorf("alive = %v, want %v", b.Alive(), tc.alive)
			}
		})
	}
}

func TestDialCountsPendingAndHonoursDeadline(t *testing.T) {
	t.Parallel()
	entered := make(chan time.Time)
	release := make(chan struct{})
	var wg sync.WaitGroup
	b := New(Options{Address: "10.0.0.1:80", ConnTO: time.Hour, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		dl, _ := ctx.Deadline()
		entered <- dl
		<-release
		c, s := net.Pipe()
		s.Close()
		return c, nil
	}})
	deadline := time.Now().Add(time.Minute)
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := b.Dial(deadline)
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
	}()
	if dl := <-entered; !dl.Equal(deadline) {
		t.Errorf("dial deadline %v, want the caller's %v (earlier than ConnTO)", dl, deadline)
	}
	if b.Pending() != 1 || !b.Available() {
		t.Errorf("pending %d during dial, want 1", b.Pending())
	}
	close(release)
	wg.Wait()
	if b.Pending() != 0 || b.Active() != 0 {
		t.Errorf("pending %d active %d after dial+close", b.Pending(), b.Active())
	}
}

// TestStaleConnDetected uses real sockets: a conn the backend closed, or on
// which it sent unsolicited bytes, must not be handed out again.
func TestStaleConnDetected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		server func(net.Conn)
		reuse  bool
	}{
		{name: "open idle conn is reused", server: func(net.Conn) {}, reuse: true},
		{name: "closed by backend", server: func(s net.Conn) { s.Close() }},
		{name: "unsolicited data", server: func(s net.Conn) { s.Write([]byte("HTTP/1.1 408 Request Timeout\r\n\r\n")) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				s, err := ln.Accept()
				if err == nil {
					accepted <- s
				}
				close(accepted)
			}()
			b := New(Options{Address: ln.Addr().String()})
			c, err := b.Dial(time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			s := <-accepted
			defer s.Close()
			tc.server(s)
			if !tc.reuse {
				// Wait until the kernel has the FIN/data for us.
				waitFor(t, "the event to reach the client socket", func() bool { return !c.peek.idleOK() })
			}
			b.Put(c)
			// Only conns parked for longer than peekAfter are checked.
			c.idleSince.Add(-2 * int64(peekAfter))
			got, ok := b.Get()
			if ok != tc.reuse {
				t.Fatalf("Get ok = %v, want %v", ok, tc.reuse)
			}
			if ok {
				got.Close()
			}
			if b.Idle() != 0 || b.Active() != 0 {
				t.Errorf("idle %d active %d", b.Idle(), b.Active())
			}
		})
	}
}

// TestPoolConcurrent hammers Get/Put/Dial from several goroutines; with
// -race it proves the slots need no lock, and the counters must balance.
func TestPoolConcurrent(t *testing.T) {
	t.Parallel()
	b := pipeBackend(t, Options{MaxIdle: 4})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				c, ok := b.Get()
				if !ok {
					var err error
					if c, err = b.Dial(time.Time{}); err != nil {
						t.Error(err)
						return
					}
				}
				b.Done(c, 200, time.Millisecond)
				if i%7 == 0 {
					c.Close()
				} else {
					b.Put(c)
				}
				if i%101 == 0 {
					b.ReapIdle()
				}
			}
		}()
	}
	wg.Wait()
	if b.Active() != 0 || b.Idle() > 4 || b.Requests() != 4000 {
		t.Errorf("active %d idle %d requests %d", b.Active(), b.Idle(), b.Requests())
	}
	b.CloseIdle()
	if b.Idle() != 0 {
		t.Errorf("idle after CloseIdle = %d", b.Idle())
	}
}

func TestPoolAllocs(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	tests := []struct {
		name string
		b    *Backend
	}{
		{name: "tcp with stale check", b: New(Options{Address: ln.Addr().String()})},
		{name: "pipe", b: pipeBackend(t, Options{})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.b.Dial(time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			tc.b.Put(c)
			allocs := testing.AllocsPerRun(1000, func() {
				c, ok := tc.b.Get()
				if !ok {
					panic("pool lost its conn")
				}
				tc.b.Done(c, 200, time.Millisecond)
				tc.b.Put(c)
			})
			if allocs != 0 {
				t.Errorf("Get+Done+Put allocates %v per run, want 0", allocs)
			}
			tc.b.CloseIdle()
		})
	}
}
