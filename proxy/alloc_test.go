package proxy

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"lbd/backend"
	"lbd/balancer"
	"lbd/config"
	"lbd/http1"
	"lbd/service"
)

// memConn is an in-memory net.Conn: reads come from in, writes are
// counted (and kept in out when keep is set). It never allocates.
type memConn struct {
	in    []byte
	off   int
	wrote int
	keep  bool
	out   []byte
	reply []byte // backend mode: every write arms this answer
}

func (m *memConn) Read(p []byte) (int, error) {
	if m.off >= len(m.in) {
		return 0, io.EOF
	}
	n := copy(p, m.in[m.off:])
	m.off += n
	return n, nil
}

func (m *memConn) Write(p []byte) (int, error) {
	m.wrote += len(p)
	if m.keep {
		m.out = append(m.out, p...)
	}
	if m.reply != nil {
		m.in, m.off = m.reply, 0
	}
	return len(p), nil
}

var memAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}

func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return memAddr }
func (m *memConn) RemoteAddr() net.Addr             { return memAddr }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

const (
	benchRequest = "GET /index.html?q=1 HTTP/1.1\r\nHost: www.example.com\r\n" +
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/120.0\r\n" +
		"Accept: text/html,application/xhtml+xml\r\nAccept-Language: en-US,en;q=0.5\r\n" +
		"Accept-Encoding: gzip, deflate\r\nCookie: sid=abc123; theme=dark\r\n\r\n"
	benchResponse = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n" +
		"Date: Mon, 30 Nov 2026 07:00:00 GMT\r\n\r\n" +
		"0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
)

// newMemProxy builds a listener with one service and one in-memory
// backend, and a client connection to it.
func newMemProxy(t testing.TB, be *memConn) (*conn, *Listener, *memConn) {
	b := backend.New(backend.Options{
		Network: "tcp", Address: "127.0.0.1:1", Priority: 5,
		TimeOut: time.Second, ConnTO: time.Second,
		DialContext: func(context.Context, string, string) (net.Conn, error) { return be, nil },
	})
	algo := balancer.New(balancer.Random, []*backend.Backend{b})
	t.Cleanup(algo.Close)
	svc, err := service.New(&config.Service{}, service.Options{Backends: []*backend.Backend{b}, Algo: algo})
	if err != nil {
		t.Fatal(err)
	}
	st := &Listener{
		Dialect: config.DialectPound, Limits: http1.DefaultLimits, XHTTP: 0,
		Client: time.Second, Errors: NewErrorPages(config.DialectPound, nil),
		Scheme: "http", Port: "80", Forwarded: true, MaxTries: 3,
		Edits: NewEdits(EditsConfig{LocationInPlace: true}),
	}
	st.Router.Services = []*service.Service{svc}
	st.SvcEdits = map[*service.Service]*HeaderEdits{svc: NewEdits(EditsConfig{LocationInPlace: true})}
	srv := NewServer(st)
	client := &memConn{}
	return newConn(srv, client), st, client
}

// cycle serves one request from a fresh client read position.
func cycle(c *conn, st *Listener, client *memConn) bool {
	client.off = 0
	c.r, c.w = 0, 0
	if err := c.readHead(st); err != nil {
		return false
	}
	return c.handle(st)
}

func TestRequestCycleDoesNotAllocate(t *testing.T) {
	be := &memConn{reply: []byte(benchResponse)}
	c, st, client := newMemProxy(t, be)
	client.in = []byte(benchRequest)
	client.keep = true
	if !cycle(c, st, client) {
		t.Fatalf("first cycle failed; client got %q", client.out)
	}
	if got := string(client.out); len(got) < 100 || got[:15] != "HTTP/1.1 200 OK" {
		t.Fatalf("client got %q", got)
	}
	client.keep = false
	allocs := testing.AllocsPerRun(1000, func() {
		if !cycle(c, st, client) {
			t.Fatal("cycle failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("request cycle allocates %.1f times per request, want 0", allocs)
	}
	checkRecorded(t, c, st, 1002) // the first cycle, AllocsPerRun's warm-up and 1000 runs
}

// checkRecorded verifies that the lbd_* recorders the cycles above fed
// (without allocating) counted every request once, as a 2xx.
func checkRecorded(t *testing.T, c *conn, st *Listener, want uint64) {
	t.Helper()
	svc := st.Router.Services[0]
	be := svc.Backends[0]
	tests := []struct {
		name    string
		count   uint64
		class2x uint64
	}{
		{name: "listener", count: c.srv.Requests().Duration.Snapshot().Count, class2x: c.srv.Requests().Codes.Counts()[2]},
		{name: "service", count: svc.Stats.Duration.Snapshot().Count, class2x: svc.Stats.Codes.Counts()[2]},
		{name: "backend", count: be.Durations().Count, class2x: uint64(be.StatusCount(2))},
	}
	for _, tc := range tests {
		if tc.count != want || tc.class2x != want {
			t.Errorf("%s recorded %d requests, %d of them 2xx; want %d", tc.name, tc.count, tc.class2x, want)
		}
	}
}

func BenchmarkRequestCycle(b *testing.B) {
	be := &memConn{reply: []byte(benchResponse)}
	c, st, client := newMemProxy(b, be)
	client.in = []byte(benchRequest)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchRequest) + len(benchResponse)))
	for b.Loop() {
		if !cycle(c, st, client) {
			b.Fatal("cycle failed")
		}
	}
}
