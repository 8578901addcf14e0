// Package h2 serves HTTP/2, negotiated by ALPN on TLS listeners, with
// golang.org/x/net/http2 and hands every stream to the proxy's HTTP/1.1
// engine as a strict HTTP/1.1 exchange on an in-memory connection.
// Routing, balancing, sessions, header rules, error pages and logging are
// therefore the same code for both protocols, and backends keep speaking
// HTTP/1.1 as with Pound.
//lint:file-ignore SA1019 lbd accepts TLS connections itself and dispatches
// them by ALPN, so it needs x/net's ServeConn on one accepted connection,
// which net/http's built-in HTTP/2 (the suggested replacement) lacks.

package h2

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/net/http2"
)

// Defaults for Options fields left zero.
const (
	// DefaultMaxStreams is the concurrent streams per connection, as
	// HAProxy and nginx advertise (100); each active stream holds one
	// bridge to the proxy.
	DefaultMaxStreams = 100
	// DefaultMaxHeaderBytes matches the HTTP/1.1 engine's head limit.
	DefaultMaxHeaderBytes = 64 << 10
)

// Options configure a Server.
type Options struct {
	// Handoff gives the proxy the far end of a new bridge; it returns
	// false when the listener no longer accepts.
	Handoff func(net.Conn) bool
	// IdleTimeout closes a connection without streams (Pound's Client).
	IdleTimeout    time.Duration
	MaxStreams     uint32
	MaxHeaderBytes int
	Log            logrus.FieldLogger
}

// Server serves HTTP/2 connections. One Server is built per listener
// configuration; Shutdown sends GOAWAY to all of its connections.
type Server struct {
	opts Options
	h2   *http2.Server
	hs   *http.Server // base config: lets Shutdown reach every connection
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
	s := &Server{
		opts: o,
		h2:   &http2.Server{MaxConcurrentStreams: o.MaxStreams, IdleTimeout: o.IdleTimeout},
		hs:   &http.Server{MaxHeaderBytes: o.MaxHeaderBytes, ErrorLog: debugLog(o.Log)},
	}
	// ConfigureServer registers the graceful-shutdown hook on hs; its
	// error only concerns hs.TLSConfig, which this server never uses.
	_ = http2.ConfigureServer(s.hs, s.h2)
	return s
}

// debugLog sends the h2 server's own messages (broken prefaces, resets)
// to the debug level: they are about misbehaving clients, not lbd.
func debugLog(l logrus.FieldLogger) *log.Logger {
	return log.New(debugWriter{l}, "", 0)
}

// debugWriter writes each message as one debug line, synchronously (a
// logrus WriterLevel pipe would cost a goroutine per server).
type debugWriter struct{ l logrus.FieldLogger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.l.Debugf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ServeConn serves one HTTP/2 connection until it ends. c should carry
// the client's TLS facts (see proxy.TLSInfo) for the X-SSL-* headers.
func (s *Server) ServeConn(c net.Conn) {
	cs := &connState{srv: s, remote: c.RemoteAddr(), local: c.LocalAddr()}
	cs.quiet = sync.NewCond(&cs.mu)
	if ti, ok := c.(interface{ SSLHeaders() []byte }); ok {
		cs.ssl = ti.SSLHeaders()
	}
	defer cs.closeAll()
	bc, closeBC := batched(c)
	defer closeBC()
	s.h2.ServeConn(bc, &http2.ServeConnOpts{Handler: cs, BaseConfig: s.hs, Context: context.Background()})
}

// Shutdown asks every connection to finish its streams and go away.
func (s *Server) Shutdown() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the hooks run regardless; there is nothing of hs's own to wait for
	_ = s.hs.Shutdown(ctx)
}

// connState is one HTTP/2 connection: its handler and its idle bridges.
type connState struct {
	srv           *Server
	remote, local net.Addr
	ssl           []byte

	mu     sync.Mutex
	idle   []*bridge
	closed bool
	active int        // handlers running
	quiet  *sync.Cond // signalled when active drops to 0
}

// ServeHTTP handles one stream.
func (cs *connState) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !cs.enter() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	defer cs.leave()
	head, status, chunked := buildHead(make([]byte, 0, 1024), r)
	if status == 0 && r.ContentLength == 0 && !emptyBody(r.Body) {
		// DATA after a declared length of 0 (or no length on a
		// body-less request): malformed (RFC 9113 §8.1.1), and it must
		// not reach a backend as a valid empty request first.
		status = status400
	}
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	for attempt := 0; ; attempt++ {
		b, err := cs.get()
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		reuse, wrote, err := b.exchange(w, r, head, chunked)
		if err == nil && reuse {
			cs.put(b)
			return
		}
		b.close()
		switch {
		case err == nil:
			return
		case errors.Is(err, errStale) && attempt == 0:
			continue
		case !wrote && !errors.Is(err, errClientBody):
			cs.srv.opts.Log.Debugf("h2 %s: %s %s: %v", cs.remote, r.Method, r.RequestURI, err)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		// Part of the response is out: only a stream reset tells the
		// client it is incomplete.
		panic(http.ErrAbortHandler)
	}
}

// emptyBody waits for the end of a stream that declared no body and
// reports whether it indeed carried none.
func emptyBody(body io.Reader) bool {
	var one [1]byte
	n, err := body.Read(one[:])
	return n == 0 && err == io.EOF
}

// get returns an idle bridge or opens a new one.
func (cs *connState) get() (*bridge, error) {
	cs.mu.Lock()
	if n := len(cs.idle); n > 0 {
		b := cs.idle[n-1]
		cs.idle = cs.idle[:n-1]
		cs.mu.Unlock()
		return b, nil
	}
	cs.mu.Unlock()
	near, far := newPipe()
	if !cs.srv.opts.Handoff(&bridgeConn{Conn: far, remote: cs.remote, local: cs.local, ssl: cs.ssl}) {
		near.Close()
		far.Close()
		return nil, errClosing
	}
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(near)
	return &bridge{conn: near, br: br}, nil
}

var errClosing = errors.New("h2: listener closing")

// put keeps a bridge for the next stream.
func (cs *connState) put(b *bridge) {
	cs.mu.Lock()
	if !cs.closed && len(cs.idle) < int(cs.srv.opts.MaxStreams) {
		cs.idle = append(cs.idle, b)
		cs.mu.Unlock()
		return
	}
	cs.mu.Unlock()
	b.close()
}

// enter registers a running handler; false once the connection ended.
func (cs *connState) enter() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return false
	}
	cs.active++
	return true
}

func (cs *connState) leave() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.active--; cs.active == 0 {
		cs.quiet.Broadcast()
	}
}

// closeAll runs when the connection ends: it waits for handlers still
// running (the h2 server returns before they do; a listener's Close must
// not leave them behind), then drops the idle bridges, on which the
// proxy sees EOF and releases them.
func (cs *connState) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	for cs.active > 0 {
		cs.quiet.Wait()
	}
	idle := cs.idle
	cs.idle = nil
	cs.mu.Unlock()
	for _, b := range idle {
		b.close()
	}
}
