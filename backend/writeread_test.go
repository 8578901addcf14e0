//go:build linux

package backend

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

const wrAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

// tcpPair dials a backend on a loopback listener and returns the conn
// (checked out) and the server's end.
func tcpPair(t *testing.T, o Options) (*Backend, *Conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	o.Address = ln.Addr().String()
	b := New(o)
	c, err := b.Dial(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return b, c, s.(*net.TCPConn)
}

// readRequest reads until the server has n request bytes.
func readRequest(s net.Conn, n int) error {
	_, err := io.ReadFull(s, make([]byte, n))
	return err
}

func TestWriteRead(t *testing.T) {
	t.Parallel()
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	tests := []struct {
		name string
		// before runs on the server end before WriteRead; server after.
		before, server func(t *testing.T, s *net.TCPConn)
		pooled         bool // Put and Get the conn first
		req            []byte
		buf            int // read buffer (default 4096)
		timeout        time.Duration
		startAgo       time.Duration // the request's time is this long past
		wantN          int           // -1: any > 0
		wantSent       bool          // all of the request went out
		anySent        bool          // whether the write failed does not matter
		wantErr        func(error) bool
		wantUnread     bool
	}{
		{
			name: "answer", req: req, timeout: 5 * time.Second, wantN: len(wrAnswer), wantSent: true,
			server: func(t *testing.T, s *net.TCPConn) {
				if readRequest(s, len(req)) == nil {
					s.Write([]byte(wrAnswer))
				}
			},
		},
		{
			name: "answer on a pooled conn", req: req, pooled: true, timeout: 5 * time.Second,
			wantN: len(wrAnswer), wantSent: true,
			server: func(t *testing.T, s *net.TCPConn) {
				if readRequest(s, len(req)) == nil {
					s.Write([]byte(wrAnswer))
				}
			},
		},
		{
			name: "bytes behind the answer", req: req, buf: len(wrAnswer), timeout: 5 * time.Second,
			wantN: len(wrAnswer), wantSent: true, wantUnread: true,
			server: func(t *testing.T, s *net.TCPConn) {
				if readRequest(s, len(req)) == nil {
					s.Write([]byte(wrAnswer + "extra"))
				}
			},
		},
		{
			// A retry after a connect that took ConnTO: the bounded
			// wait runs from the write, the deadline from the request.
			name: "request read long ago", req: req, timeout: 5 * time.Second, startAgo: 3 * time.Second,
			wantN: len(wrAnswer), wantSent: true,
			server: func(t *testing.T, s *net.TCPConn) {
				if readRequest(s, len(req)) == nil {
					time.Sleep(50 * time.Millisecond)
					s.Write([]byte(wrAnswer))
				}
			},
		},
		{
			name: "request read longer ago than the timeout", req: req, timeout: time.Second,
			startAgo: 2 * time.Second, wantErr: isDeadline,
		},
		{
			name: "answer slower than the bounded wait", req: req, timeout: 10 * time.Second,
			wantN: len(wrAnswer), wantSent: true,
			server: func(t *testing.T, s *net.TCPConn) {
				if readRequest(s, len(req)) == nil {
					time.Sleep(staleWait + 100*time.Millisecond)
					s.Write([]byte(wrAnswer))
				}
			},
		},
		{
			name: "no answer within the timeout", req: req, timeout: 300 * time.Millisecond, wantSent: true,
			wantErr: isDeadline,
			server:  func(t *testing.T, s *net.TCPConn) { readRequest(s, len(req)) },
		},
		{
			name: "no answer, timeout beyond the bounded wait", req: req, timeout: staleWait + 300*time.Millisecond,
			wantSent: true, wantErr: isDeadline,
			server: func(t *testing.T, s *net.TCPConn) { readRequest(s, len(req)) },
		},
		{
			// Apache's lingering close: FIN, then the request is read
			// and dropped, and nothing comes back, not even a reset.
			name: "half-closed while pooled", req: req, pooled: true, timeout: 30 * time.Second,
			wantSent: true, wantErr: func(err error) bool { return errors.Is(err, io.EOF) }, wantUnread: true,
			before: func(t *testing.T, s *net.TCPConn) {
				if err := s.CloseWrite(); err != nil {
					t.Fatal(err)
				}
			},
			server: func(t *testing.T, s *net.TCPConn) { io.Copy(io.Discard, s) },
		},
		{
			name: "closed while pooled", req: req, pooled: true, timeout: 30 * time.Second, anySent: true,
			wantErr: func(err error) bool { return err != nil && !isDeadline(err) }, wantUnread: true,
			before: func(t *testing.T, s *net.TCPConn) { s.Close() },
		},
		{
			name: "request larger than the socket buffers", req: bytes.Repeat([]byte("x"), 8<<20),
			timeout: 10 * time.Second, wantN: len(wrAnswer), wantSent: true,
			server: func(t *testing.T, s *net.TCPConn) {
				time.Sleep(50 * time.Millisecond) // let the writer fill its buffer
				if readRequest(s, 8<<20) == nil {
					s.Write([]byte(wrAnswer))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, c, s := tcpPair(t, Options{})
			if c.wr.fn == nil {
				t.Fatal("a plain TCP conn should use the raw path")
			}
			if tc.before != nil {
				tc.before(t, s)
				// Let the FIN (or reset) land and the runtime's poller
				// take its edge, as it does for a conn in the pool.
				time.Sleep(50 * time.Millisecond)
			}
			if tc.pooled {
				b.Put(c)
				var ok bool
				if c, ok = b.Get(); !ok {
					t.Fatal("pooled conn not handed out again")
				}
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if tc.server != nil {
					tc.server(t, s)
				}
			}()
			n := tc.buf
			if n == 0 {
				n = 4096
			}
			buf := make([]byte, n)
			got, sent, err := c.WriteRead(tc.req, buf, time.Now().Add(-tc.startAgo), tc.timeout)
			switch {
			case tc.wantErr == nil && err != nil, tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("WriteRead error %v", err)
			case sent != tc.wantSent && !tc.anySent:
				t.Fatalf("sent %v, want %v (error %v)", sent, tc.wantSent, err)
			case tc.wantN == -1 && got == 0, tc.wantN >= 0 && got != tc.wantN:
				t.Fatalf("read %d bytes %q, want %d", got, buf[:got], tc.wantN)
			case tc.wantN > 0 && string(buf[:got]) != wrAnswer[:got]:
				t.Fatalf("read %q", buf[:got])
			case sent && c.Unread() != tc.wantUnread:
				t.Fatalf("Unread %v, want %v", c.Unread(), tc.wantUnread)
			}
			c.Close()
			s.Close()
			<-done
		})
	}
}

// TestWriteReadNotRaw: conns that are not plain TCP sockets (TLS, pipes)
// write and read through net.Conn.
func TestWriteReadNotRaw(t *testing.T) {
	b := pipeBackend(t, Options{})
	c, err := b.Dial(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.wr.usable(c) {
		t.Fatal("a pipe should not use the raw path")
	}
}

func TestWriteReadDoesNotAllocate(t *testing.T) {
	_, c, s := tcpPair(t, Options{})
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	stop := make(chan struct{})
	go func() { // answers each request; no allocation per request
		in := make([]byte, len(req))
		out := []byte(wrAnswer)
		for {
			if _, err := io.ReadFull(s, in); err != nil {
				close(stop)
				return
			}
			s.Write(out)
		}
	}()
	buf := make([]byte, 4096)
	start := time.Now()
	allocs := testing.AllocsPerRun(200, func() {
		n, sent, err := c.WriteRead(req, buf, start, 5*time.Second)
		if err != nil || !sent || n != len(wrAnswer) {
			t.Fatalf("WriteRead %d, %v, %v", n, sent, err)
		}
	})
	c.Close()
	s.Close()
	<-stop
	if allocs != 0 {
		t.Fatalf("%.1f allocations per WriteRead, want 0", allocs)
	}
}

// TestPooledConnWithPastDeadlineReused: a conn parked after an exchange
// keeps that exchange's read deadline (WriteRead's bounded wait makes it
// short); once it has passed, the pool's check of a long-idle conn must
// still find a healthy conn healthy.
func TestPooledConnWithPastDeadlineReused(t *testing.T) {
	b, c, s := tcpPair(t, Options{})
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	go func() {
		if readRequest(s, len(req)) == nil {
			s.Write([]byte(wrAnswer))
		}
	}()
	if _, _, err := c.WriteRead(req, make([]byte, 4096), time.Now(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(-time.Second)) // as after an idle while
	b.Put(c)
	c.idleSince.Add(-2 * int64(peekAfter)) // long enough idle to be checked
	got, ok := b.Get()
	if !ok {
		t.Fatal("a healthy pooled conn was dropped")
	}
	got.Close()
}
