//go:build linux

package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"lbd/internal/testconn"
	"lbd/internal/testpki"
)

// handshakingListener hands out TLS connections whose handshake is done,
// as package listener does for lbd.
type handshakingListener struct {
	net.Listener
	cfg *tls.Config
}

func (l handshakingListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := tls.Server(nc, l.cfg)
		if tc.Handshake() == nil {
			return tc, nil
		}
		nc.Close()
	}
}

// tlsServer is rawServer on a TLS listener (ECDSA P-256 certificate).
func tlsServer(t *testing.T, client time.Duration) (*Server, string) {
	t.Helper()
	cert, err := testpki.Issue(testpki.Spec{CommonName: "park.test", DNSNames: []string{"park.test"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, ln, b, algo := serveOneBackend(t, httpBackend(t, echoPath), client, 30*time.Second)
	serveTest(t, srv, handshakingListener{ln, &tls.Config{Certificates: []tls.Certificate{cert.TLS()}}}, b, algo)
	return srv, ln.Addr().String()
}

func dialTLS(t *testing.T, addr string) (*tls.Conn, *testconn.Split, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	sc := &testconn.Split{Conn: nc}
	tc := tls.Client(sc, &tls.Config{InsecureSkipVerify: true, ServerName: "park.test"})
	t.Cleanup(func() { tc.Close() })
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc, sc, bufio.NewReader(tc)
}

// TestTLSConnectionParks: an idle HTTP/1.1-over-TLS connection is parked
// whole and served again, whatever way its next request comes.
func TestTLSConnectionParks(t *testing.T) {
	shortPark(t)
	srv, addr := tlsServer(t, 30*time.Second)
	c, sc, br := dialTLS(t, addr)
	// lbd reads the first half of the record, finds no whole record, and
	// parks again before the rest comes.
	splitRecord := func(t *testing.T) {
		parks := parking.parks.Load()
		sc.Between = func() {
			waitFor(t, func() bool { return parking.parks.Load() > parks })
			waitParked(t, srv, 1)
		}
	}
	runParkSteps(t, srv, c, br, []parkStep{
		{name: "first request", parts: []string{"GET /one HTTP/1.1\r\nHost: x\r\n\r\n"}, paths: []string{"/one"}},
		{name: "after parking", parts: []string{"GET /two HTTP/1.1\r\nHost: x\r\n\r\n"}, paths: []string{"/two"}},
		{name: "pipelined pair in one record", parts: []string{"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"}, paths: []string{"/a", "/b"}},
		{name: "head in two records", parts: []string{"GET /slow HT", "TP/1.1\r\nHost: x\r\n\r\n"}, paths: []string{"/slow"}},
		{name: "record split across segments, parked between", parts: []string{"GET /split HTTP/1.1\r\nHost: x\r\n\r\n"}, before: splitRecord, paths: []string{"/split"}},
		{name: "body", parts: []string{"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", "abc"}, paths: []string{"/p"}},
	})
}

// TestTLSParkedWithRequestWaiting: a request that is in the socket as
// the connection parks (it came just after the read that found nothing)
// wakes it at once: the registration is level-triggered.
func TestTLSParkedWithRequestWaiting(t *testing.T) {
	shortPark(t)
	srv, ln, b, algo := serveOneBackend(t, httpBackend(t, echoPath), 30*time.Second, 30*time.Second)
	defer func() { algo.Close(); b.CloseIdle() }()
	ln.Close() // connections are made here
	cert, err := testpki.Issue(testpki.Spec{CommonName: "park.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	z, a := tcpPair(t) // dialled end, accepted end
	server := tls.Server(a, &tls.Config{Certificates: []tls.Certificate{cert.TLS()}})
	client := tls.Client(z, &tls.Config{InsecureSkipVerify: true})
	defer client.Close()
	go client.Handshake()
	if err := server.Handshake(); err != nil {
		t.Fatal(err)
	}
	c := newConn(srv, server)
	srv.track(c, true)
	if _, err := client.Write([]byte("GET /waiting HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return pending(socketFD(t, a.(*net.TCPConn))) > 0 })
	if !c.parkHeld() {
		t.Fatal("not parked")
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if code, body := readBody(t, bufio.NewReader(client)); code != 200 || !bytes.Contains([]byte(body), []byte(" /waiting ")) {
		t.Fatalf("got %d %q, want 200 for /waiting", code, body)
	}
	srv.Close()
	waitNoConns(t, srv)
}

func socketFD(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(s uintptr) { fd = int(s) })
	return fd
}

// TestTLSParkedEnds: a parked TLS connection ends, counted out, when its
// client closes it (with or without close_notify, or resets it), when
// its Client timeout passes, and when its server closes.
func TestTLSParkedEnds(t *testing.T) {
	cases := []struct {
		name   string
		client time.Duration
		act    func(srv *Server, c *tls.Conn, raw net.Conn)
		// peerSees: the client reads the end (EOF) itself.
		peerSees bool
	}{
		{name: "close_notify", client: 30 * time.Second, act: func(_ *Server, c *tls.Conn, _ net.Conn) { c.Close() }},
		{name: "FIN without close_notify", client: 30 * time.Second, act: func(_ *Server, _ *tls.Conn, raw net.Conn) { raw.(*net.TCPConn).CloseWrite() }},
		{name: "reset", client: 30 * time.Second, act: func(_ *Server, _ *tls.Conn, raw net.Conn) {
			raw.(*net.TCPConn).SetLinger(0)
			raw.Close()
		}},
		{name: "Client timeout", client: 300 * time.Millisecond, act: func(*Server, *tls.Conn, net.Conn) {}, peerSees: true},
		{name: "server closed", client: 30 * time.Second, act: func(srv *Server, _ *tls.Conn, _ net.Conn) { srv.Close() }, peerSees: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			shortPark(t)
			srv, addr := tlsServer(t, tc.client)
			c, sc, br := dialTLS(t, addr)
			if _, err := c.Write([]byte("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			if code, _ := readBody(t, br); code != 200 {
				t.Fatalf("status %d", code)
			}
			waitParked(t, srv, 1)
			start := time.Now()
			tc.act(srv, c, sc.Conn)
			waitNoConns(t, srv)
			if p := srv.parked.Load(); p != 0 {
				t.Fatalf("%d still parked", p)
			}
			if tc.peerSees {
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if n, err := br.Read(make([]byte, 1)); err != io.EOF {
					t.Fatalf("the client read %d bytes (%v), want EOF (close_notify)", n, err)
				}
				if tc.client < time.Second && time.Since(start) < tc.client/2 {
					t.Fatalf("closed after %v, before the Client timeout (%v)", time.Since(start), tc.client)
				}
			}
		})
	}
}

// heldMemConn is an in-memory TLS connection as the proxy sees one
// (NetConn: one it may park whole).
type heldMemConn struct{ *tlsMemConn }

func (c heldMemConn) NetConn() net.Conn { return c.memConn }

// TestTLSWaitDoesNotAllocate: the wait for a request on a TLS keep-alive
// connection, under parkDelay's read deadline, allocates nothing: the
// request cycle of a busy TLS connection stays at 0 allocations.
func TestTLSWaitDoesNotAllocate(t *testing.T) {
	be := &memConn{reply: []byte(benchResponse)}
	_, st, _ := newMemProxy(t, be)
	st.Client = time.Minute
	client := heldMemConn{&tlsMemConn{memConn: &memConn{in: []byte(benchRequest)}, ssl: []byte(sslLines)}}
	c := newConn(NewServer(st), client)
	if !c.parksHeld(st) {
		t.Fatal("an idle TLS connection is not one to park")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		client.off = 0
		c.r, c.w = 0, 0
		if parked, err := c.waitHeld(st); parked || err != nil {
			t.Fatalf("wait: parked %v, %v", parked, err)
		}
		if err := c.readHead(st); err != nil || !c.handle(st) {
			t.Fatal("cycle failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("TLS request cycle with the wait allocates %.1f times per request, want 0", allocs)
	}
}

// BenchmarkHeldParkCycle is what parking a TLS connection whole and
// resuming it costs outside the request path, as BenchmarkParkCycle is
// for a bare socket: the registration (within Control) and its removal,
// the conn structure given back and taken again, the resuming goroutine
// and a deadline. No descriptor is copied and no net.Conn is rebuilt.
func BenchmarkHeldParkCycle(b *testing.B) {
	_, nc := tcpPair(b)
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(ep)
	srv := NewServer(&Listener{Client: time.Hour})
	resumed := make(chan *conn)
	b.ReportAllocs()
	for b.Loop() {
		c := newConn(srv, nc)
		fd := -1
		rc.Control(func(s uintptr) {
			fd = int(s)
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd)}
			if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
				b.Fatal(err)
			}
		})
		c.recycle()
		go func() {
			syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, fd, nil)
			resumed <- newConn(srv, nc)
		}()
		c = <-resumed
		nc.SetReadDeadline(time.Now().Add(time.Second))
		c.recycle()
	}
}

// trickleConn is a client's socket that sends each write one byte at a
// time, gap apart, once on is set: a TLS record trickled in, each byte
// waking a parked connection without completing the record.
type trickleConn struct {
	net.Conn
	gap time.Duration
	on  atomic.Bool
}

func (s *trickleConn) Write(p []byte) (int, error) {
	if !s.on.Load() {
		return s.Conn.Write(p)
	}
	for i := range p {
		if _, err := s.Conn.Write(p[i : i+1]); err != nil {
			return i, err
		}
		time.Sleep(s.gap)
	}
	return len(p), nil
}

// TestTLSTrickledRecordMeetsClientTimeout: the Client timeout of a TLS
// connection runs from when its wait for a request began, however often
// parts of a record wake it from the parker meanwhile: a request whose
// record takes longer than the timeout to come is not served and the
// connection ends.
func TestTLSTrickledRecordMeetsClientTimeout(t *testing.T) {
	shortPark(t)
	const client = 600 * time.Millisecond
	srv, addr := tlsServer(t, client)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &trickleConn{Conn: nc, gap: 100 * time.Millisecond}
	c := tls.Client(tr, &tls.Config{InsecureSkipVerify: true, ServerName: "park.test"})
	t.Cleanup(func() { nc.Close() })
	br := bufio.NewReader(c)
	req := []byte("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	if code, _ := readBody(t, br); code != 200 {
		t.Fatalf("status %d", code)
	}
	waitParked(t, srv, 1)
	tr.on.Store(true)
	wrote := make(chan error, 1)
	go func() { _, err := c.Write(req); wrote <- err }()
	waitNoConns(t, srv)
	if p := srv.parked.Load(); p != 0 {
		t.Fatalf("%d still parked", p)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(br, nil); err == nil {
		t.Fatalf("the trickled request was answered: %s", resp.Status)
	}
	nc.Close() // ends the trickle if it is still writing
	<-wrote
}
