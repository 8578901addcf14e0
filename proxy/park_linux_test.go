//go:build linux

package proxy

import (
	"bytes"
	"testing"
	"time"
)

// shortPark makes connections park after 20 ms for one test.
func shortPark(t *testing.T) {
	t.Helper()
	if !parking.ready() {
		t.Fatal("the parker did not start")
	}
	old := parkAfter
	parkAfter = 20 * time.Millisecond
	t.Cleanup(func() { parkAfter = old })
}

// parkedConns counts srv's connections waiting in the parker.
func parkedConns(srv *Server) (n int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	parking.mu.Lock()
	defer parking.mu.Unlock()
	for c := range srv.conns {
		if c.raw.parked {
			if c.buf != nil || c.hdrs != nil {
				return -1 // parked with its buffers: nothing saved
			}
			n++
		}
	}
	return n
}

func waitParked(t *testing.T, srv *Server, want int) {
	t.Helper()
	for i := 0; parkedConns(srv) != want; i++ {
		if i == 400 {
			t.Fatalf("%d connections parked (-1: one kept its buffers), want %d", parkedConns(srv), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIdleConnectionParks: a keep-alive connection idle for parkAfter
// gives back its goroutine and buffers; its next request, a pipelined
// pair, and a request that comes in pieces are served as ever, and it
// parks again after each.
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
}

// TestParkedConnectionTimesOut: the Client timeout still ends a parked
// connection (silently, as Pound does), and Server.Close ends one at
// once.
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

// TestParkingAllocatesTwice: a request on a parked connection (resume,
// serve, park again) allocates twice in steady state: the *net.OpError
// in which RawConn.Read reports that parkAfter's deadline passed, and
// the closure of the go statement that resumes it. A busy connection
// does not park (TestRawLoopDoesNotAllocate), so this is at most once
// per parkAfter of idleness per connection.
func TestParkingAllocatesTwice(t *testing.T) {
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
	if allocs := testing.AllocsPerRun(20, roundTrip); allocs > 2 && !raceEnabled {
		t.Fatalf("%.2f allocations per parked request, want at most 2", allocs)
	}
	if parks := parking.parks.Load() - before; parks < 21 {
		t.Fatalf("%d parks in 21 requests: the connection did not park between them", parks)
	}
}
