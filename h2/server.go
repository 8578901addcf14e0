// Package h2 serves HTTP/2, negotiated by ALPN on TLS listeners, and
// hands every stream to the proxy's HTTP/1.1 engine as a strict
// HTTP/1.1 exchange on an in-memory connection (a vconn). Routing,
// balancing, sessions, header rules, error pages and logging are
// therefore the same code for both protocols, and backends keep speaking
// HTTP/1.1 as with Pound.
//
// The frame layer is lbd's own, on golang.org/x/net's Framer and HPACK
// decoder: one goroutine per connection reads and dispatches frames,
// the request head is written straight from the HPACK decoder's fields,
// and the proxy's goroutine encodes its HTTP/1.1 response into frames as
// it writes it. A stream thus costs one goroutine hand-off each way,
// which is what lets HTTP/2 keep up with HTTP/1.1 (bench/RESULTS.md §7).
//
// Unlike the HTTP/1.1 path, this one takes locks: a connection's windows,
// streams and output queue are shared by its reader, its writer and the
// proxy goroutines of its streams, so they sit behind that connection's
// own mutexes. Nothing is shared between connections, and a request
// allocates nothing in steady state (TestStreamAllocs).
package h2

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Defaults for Options fields left zero.
const (
	// DefaultMaxStreams is the concurrent streams per connection, as
	// HAProxy and nginx advertise (100); each active stream holds one
	// vconn in the proxy.
	DefaultMaxStreams = 100
	// DefaultMaxHeaderBytes matches the HTTP/1.1 engine's head limit.
	DefaultMaxHeaderBytes = 64 << 10
)

// Options configure a Server.
type Options struct {
	// Handoff gives the proxy a new vconn to serve; it returns false
	// when the listener no longer accepts.
	Handoff func(net.Conn) bool
	// IdleTimeout closes a connection without streams (Pound's Client),
	// and bounds each write to the client.
	IdleTimeout    time.Duration
	MaxStreams     uint32
	MaxHeaderBytes int
	Log            logrus.FieldLogger
}

// Server serves HTTP/2 connections. One Server is built per listener
// configuration; Shutdown sends GOAWAY to all of its connections.
type Server struct {
	opts Options

	mu    sync.Mutex
	conns map[*serverConn]struct{}
	shut  bool
	live  sync.WaitGroup // connections not yet cleaned up, parked ones too
	// open and parked count connections, for the delay before parking
	// (park.go).
	open, parked atomic.Int64
}

// New builds a Server.
func New(o Options) *Server {
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	return &Server{opts: o, conns: map[*serverConn]struct{}{}}
}

// ServeConn serves one HTTP/2 connection until it ends or is parked
// (then in goroutines of its own once it wakes; Wait). c should carry
// the client's TLS facts (see proxy.TLSInfo) for the X-SSL-* headers.
func (s *Server) ServeConn(c net.Conn) {
	sc := newServerConn(s, c)
	s.mu.Lock()
	shut := s.shut
	s.conns[sc] = struct{}{}
	s.live.Add(1)
	s.open.Add(1)
	s.mu.Unlock()
	if shut {
		sc.cleanup()
		return
	}
	sc.serve()
}

func (s *Server) forget(sc *serverConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.mu.Unlock()
	s.open.Add(-1)
	s.live.Done()
}

// Wait blocks until every connection has ended (after Shutdown).
// ServeConn returns when its connection ends or is parked: an idle
// connection waits without a goroutine (park.go).
func (s *Server) Wait() { s.live.Wait() }

// Shutdown asks every connection to finish its streams and go away.
func (s *Server) Shutdown() {
	s.mu.Lock()
	s.shut = true
	conns := make([]*serverConn, 0, len(s.conns))
	for sc := range s.conns {
		conns = append(conns, sc)
	}
	s.mu.Unlock()
	for _, sc := range conns {
		sc.shutdown()
	}
}
