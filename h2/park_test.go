//go:build linux

package h2

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"lbd/internal/testconn"
	"lbd/internal/testpki"
)

// shortPark parks idle connections after 20 ms for one test.
func shortPark(t *testing.T) {
	after, soon := parkAfter, parkSoon
	parkAfter, parkSoon = 20*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { parkAfter, parkSoon = after, soon })
}

// dialTLS serves one HTTP/2-over-TLS connection over loopback TCP (so
// that it can be parked) and returns the raw client on it.
func dialTLS(t *testing.T, s *Server) (*h2conn, *testconn.Split, *tls.Conn) {
	t.Helper()
	cert, err := testpki.Issue(testpki.Spec{CommonName: "h2.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	sc := &testconn.Split{Conn: nc}
	cl := tls.Client(sc, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	srv := tls.Server(sv, &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, NextProtos: []string{"h2"}})
	go cl.Handshake()
	if err := srv.Handshake(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.ServeConn(srv); close(done) }()
	hc := &h2conn{t: t, c: cl, done: done, fr: http2.NewFramer(cl, cl), writes: make(chan func(), 8)}
	hc.enc = hpack.NewEncoder(&hc.buf)
	cl.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		for w := range hc.writes {
			w()
		}
	}()
	t.Cleanup(func() { close(hc.writes); cl.Close(); s.Shutdown(); waitDone(t, s) })
	hc.writes <- func() {
		io.WriteString(cl, http2.ClientPreface)
		hc.fr.WriteSettings()
	}
	return hc, sc, cl
}

// waitDone waits (bounded) until every connection of s has ended.
func waitDone(t *testing.T, s *Server) {
	t.Helper()
	ended := make(chan struct{})
	go func() { s.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("connections still open")
	}
}

// parkedConns counts the connections of s that are parked.
func parkedConns(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for sc := range s.conns {
		sc.mu.Lock()
		if sc.park.parked {
			n++
		}
		sc.mu.Unlock()
	}
	return n
}

func waitParked(t *testing.T, s *Server) {
	t.Helper()
	waitFor(t, func() bool { return parkedConns(s) == 1 })
}

// TestParkedConnectionResumes: an idle HTTP/2-over-TLS connection is
// parked and served again, however its next frames come, with its
// HPACK state intact.
func TestParkedConnectionResumes(t *testing.T) {
	shortPark(t)
	rec := &recorder{}
	s := New(Options{Handoff: rec.handoff, Log: quietLog(), IdleTimeout: 30 * time.Second})
	hc, sc, _ := dialTLS(t, s)
	// Indexed fields: the client's encoder adds them to its dynamic
	// table; a resumed connection must still decode references to them.
	fields := []string{":method", "GET", ":scheme", "https", ":path", "/p", ":authority", "h", "x-custom", "kept in the table"}
	hc.send(1, fields, "")
	if r := hc.response(1); r.status != "200" {
		t.Fatalf("first request: %+v", r)
	}
	waitParked(t, s)
	for i, step := range []struct {
		name string
		do   func(id uint32)
	}{
		{"request after parking", func(id uint32) { hc.send(id, fields, "") }},
		{"PING, then a request", func(id uint32) {
			parks := parkCount(s)
			hc.writes <- func() { hc.fr.WritePing(false, [8]byte{1}) }
			waitFor(t, func() bool { return parkCount(s) > parks }) // woken, answered, parked again
			hc.send(id, fields, "")
		}},
		{"a TLS record split across segments, parked between", func(id uint32) {
			parks := parkCount(s)
			sc.Between = func() { waitFor(t, func() bool { return parkCount(s) > parks }) }
			hc.send(id, fields, "")
		}},
		{"a body in frames slower than the delay", func(id uint32) {
			hc.sendFrames(id, []string{":method", "POST", ":scheme", "https", ":path", "/b", ":authority", "h"}, nil)
			hc.writes <- func() { hc.fr.WriteData(id, false, []byte("ab")) }
			time.Sleep(100 * time.Millisecond) // the stream is open: not parked, nothing cut
			hc.writes <- func() { hc.fr.WriteData(id, true, []byte("cd")) }
		}},
	} {
		t.Run(step.name, func(t *testing.T) {
			id := uint32(3 + 2*i)
			step.do(id)
			if r := hc.response(id); r.status != "200" {
				t.Fatalf("%+v", r)
			}
			waitParked(t, s)
		})
	}
	got := rec.requests()
	want := []string{`GET /p ""`, `GET /p ""`, `GET /p ""`, `GET /p ""`, `POST /b "abcd"`}
	if len(got) != len(want) {
		t.Fatalf("requests %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("requests %q, want %q", got, want)
		}
	}
}

// parkCount is how many times the connection of s has been parked.
func parkCount(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sc := range s.conns {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return sc.park.count
	}
	return 0
}

// TestParkedConnectionEnds: a parked connection ends, and is counted
// out, when its client closes it, when the idle timeout passes (GOAWAY
// first) and on Shutdown (GOAWAY first).
func TestParkedConnectionEnds(t *testing.T) {
	cases := []struct {
		name    string
		timeout time.Duration
		act     func(s *Server, c *tls.Conn)
		goAway  bool
	}{
		{"client closes", 30 * time.Second, func(_ *Server, c *tls.Conn) { c.Close() }, false},
		{"client leaves without close_notify", 30 * time.Second, func(_ *Server, c *tls.Conn) { c.NetConn().Close() }, false},
		{"idle timeout", 300 * time.Millisecond, func(*Server, *tls.Conn) {}, true},
		{"shutdown", 30 * time.Second, func(s *Server, _ *tls.Conn) { s.Shutdown() }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shortPark(t)
			rec := &recorder{}
			s := New(Options{Handoff: rec.handoff, Log: quietLog(), IdleTimeout: tc.timeout})
			hc, _, c := dialTLS(t, s)
			hc.send(1, getFields, "")
			if r := hc.response(1); r.status != "200" {
				t.Fatalf("first request: %+v", r)
			}
			waitParked(t, s)
			tc.act(s, c)
			if tc.goAway {
				if code, last := hc.goAway(); code != http2.ErrCodeNo || last != 1 {
					t.Errorf("GOAWAY %v last %d, want NO_ERROR 1", code, last)
				}
				if _, err := hc.fr.ReadFrame(); err != io.EOF {
					t.Errorf("after GOAWAY: %v, want EOF", err)
				}
			}
			waitDone(t, s)
			rec.wg.Wait()
		})
	}
}
