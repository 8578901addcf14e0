// Package proxy is lbd's HTTP/1.1 engine: it serves client connections on
// a listener, reads each request strictly (package http1), routes it,
// forwards it over a pooled backend connection and relays the response.
//
// It is built on net.Conn rather than net/http because a proxy must see
// and refuse what net/http hides or tolerates (CL+TE, h2c upgrades, header
// counts; see shared/spec/http-strictness.md), and because the hot path
// must not allocate.
package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lbd/config"
	"lbd/http1"
	"lbd/internal/metrics"
	"lbd/internal/sockio"
	"lbd/rules"
	"lbd/service"
	"lbd/waf"
)

// Listener is the immutable runtime view of one listener, read by every
// request through Server's atomic pointer and replaced whole on reload.
type Listener struct {
	Cfg     *config.Listener
	Dialect config.Dialect
	Router  service.Router
	Limits  http1.Limits
	XHTTP   int
	Client  time.Duration // idle/read timeout for client requests
	Errors  *ErrorPages
	Log     *AccessLog // nil: no request log
	// WAF runs the listener's ModSecurity rules (nil: none; waf.go).
	WAF *waf.Engine
	// Challenges answers ACME HTTP-01 validations before routing (nil:
	// no automatic certificates; acme.go).
	Challenges Challenges

	// Scheme and Port are sent in X-Forwarded-Proto/Port.
	Scheme string
	Port   string
	// Forwarded adds X-Forwarded-For/Proto/Port (HeaderOption forwarded)
	// before the rules see the request, as Pound does.
	Forwarded bool
	// TLSHeadersLast sends the X-SSL-* lines after every edit instead of
	// before the rules see the request (zproxy's order).
	TLSHeadersLast bool
	// FramingInPlace writes the response framing lines (Connection,
	// Transfer-Encoding, a 101's Upgrade) where the backend had them
	// (zproxy's way) instead of after the backend's headers.
	FramingInPlace bool
	// Edits are the listener's own edits (for replies before a service
	// is chosen); SvcEdits those of each of its services.
	Edits    *HeaderEdits
	SvcEdits map[*service.Service]*HeaderEdits
	// ReqRules and RespRules are the listener's Pound 4 request and
	// response rules; Detached counts the configuration's detached
	// conditions (each request caches their results).
	ReqRules  *rules.Program
	RespRules *rules.Program
	Detached  int
	// Combine names the headers whose repeated lines are joined
	// (CombineHeaders).
	Combine []string
	// H2C accepts cleartext HTTP/2 with prior knowledge (h2c.go).
	H2C bool
	// Diag receives diagnostics about requests (a rule's expansion
	// error); nil discards them.
	Diag func(msg string)
	// Metrics writes the OpenMetrics exposition for a Metrics backend and
	// Control serves the control API for a Control backend (Pound 4).
	Metrics     func(w io.Writer) error
	MetricsType string
	Control     http.Handler
	// Dashboard serves lbd's live dashboard for a Dashboard backend.
	Dashboard http.Handler
	// MaxTries bounds how many backends one request may be offered to.
	MaxTries int
	// Tunnel relays every connection to a backend of the listener's one
	// service without reading HTTP (Pound's Tunnel).
	Tunnel bool
	// PurgeCache removes a URL from the caches, here and in the cluster
	// (the engine's, as the control API's purge); nil: from the
	// service's own cache only. The PURGE method calls it (purge.go).
	PurgeCache func(host, target string, prefix bool) (int, error)
}

// tries is how many backends one request may be offered to: MaxTries,
// or 3 when it is not set.
func (l *Listener) tries() int {
	if l.MaxTries <= 0 {
		return 3
	}
	return l.MaxTries
}

// diag reports a diagnostic about the current request.
func (l *Listener) diag(err error) {
	if l.Diag == nil || err == nil {
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		l.Diag(line)
	}
}

// Server serves one listening socket.
type Server struct {
	state   atomic.Pointer[Listener]
	enabled atomic.Bool

	mu      sync.Mutex // guards conns, ln and loop; never taken per request
	conns   map[*conn]struct{}
	ln      net.Listener
	loop    chan struct{} // closed when Serve returns
	closing atomic.Bool
	// handover: closing for a binary upgrade. Idle keep-alive
	// connections then wait for their next request (answered with
	// "Connection: close") instead of being closed under a client that
	// may be sending it.
	handover atomic.Bool
	// inqListener: the connections Serve's listener accepts start with
	// TCP_INQ on (sockio.InheritsInq; rawloop_linux.go).
	inqListener atomic.Bool

	Active atomic.Int64 // open client connections, parked ones too
	// parked: connections the parker holds (park_linux.go), counted in
	// Active but not in conns. closed: Close was called.
	parked atomic.Int64
	closed atomic.Bool
	// generated counts the 3xx, 4xx and 5xx replies lbd wrote itself
	// (zproxy's listener code hits).
	generated [3]atomic.Int64
	// wafHits counts the requests a WAF rule decided (zproxy's waf-hits).
	wafHits atomic.Int64
	// h2c serves the listener's cleartext HTTP/2 connections (h2c.go).
	h2c h2cServer
	// grpcCodes counts gRPC responses by grpc-status (grpc.go).
	grpcCodes [grpcCodeCount]atomic.Int64
	// requests records every HTTP request's duration and status class
	// (lbd_listener_* metrics). It lives on the Server, which survives
	// reloads, not on the Listener state, which does not.
	requests metrics.Requests
}

// Requests is the listener's request recorder (read it, never write it).
func (s *Server) Requests() *metrics.Requests { return &s.requests }

// WAFHits is how many requests a WAF rule decided.
func (s *Server) WAFHits() int64 { return s.wafHits.Load() }

// countGenerated counts a reply lbd wrote itself.
func (s *Server) countGenerated(status int) {
	if i := status/100 - 3; i >= 0 && i < len(s.generated) {
		s.generated[i].Add(1)
	}
}

// Generated returns how many 3xx, 4xx and 5xx replies lbd wrote itself.
func (s *Server) Generated() (hits3xx, hits4xx, hits5xx int64) {
	return s.generated[0].Load(), s.generated[1].Load(), s.generated[2].Load()
}

// NewServer returns a server for the listener state l.
func NewServer(l *Listener) *Server {
	// The idle-connection parker's epoll descriptor opens with the first
	// server, before any connection (not in the middle of traffic, nor
	// in Serve's goroutine after the socket already accepts: a count of
	// lbd's descriptors taken then is the steady one); false (no epoll
	// here) only means nothing is parked.
	parking.ready()
	s := &Server{conns: make(map[*conn]struct{})}
	s.state.Store(l)
	s.enabled.Store(true)
	return s
}

// State returns the listener state in use.
func (s *Server) State() *Listener { return s.state.Load() }

// Swap installs a new listener state; requests already being handled
// finish on the state they started with.
func (s *Server) Swap(l *Listener) { s.state.Store(l) }

// Enabled reports whether the listener accepts requests (an operator can
// disable it through the control API; requests then get 503).
func (s *Server) Enabled() bool { return s.enabled.Load() }

// SetEnabled enables or disables the listener.
func (s *Server) SetEnabled(on bool) { s.enabled.Store(on) }

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("proxy: server closed")

// Serve accepts connections on ln until Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.ln = ln
	s.inqListener.Store(sockio.InheritsInq(ln))
	loop := make(chan struct{})
	s.loop = loop
	s.mu.Unlock()
	defer close(loop)
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTemporary(err)) {
				delay = backoff(delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		c := newConn(s, nc)
		if !s.track(c, true) {
			nc.Close()
			return ErrServerClosed
		}
		go c.serve()
	}
}

// errTemporary treats resource exhaustion on accept (EMFILE and friends)
// as retryable, as net/http does, instead of stopping the listener.
func errTemporary(err error) error {
	var se interface{ Temporary() bool }
	if errors.As(err, &se) && se.Temporary() {
		return err
	}
	return errNever
}

var errNever = errors.New("never")

func backoff(d time.Duration) time.Duration {
	if d == 0 {
		return 5 * time.Millisecond
	}
	if d *= 2; d > time.Second {
		d = time.Second
	}
	return d
}

func (s *Server) track(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		// A connection accepted as a hand-over begins is served (with
		// "Connection: close"): closing it would reset a client that
		// has sent its request already.
		if s.closing.Load() && !s.handover.Load() {
			return false
		}
		s.conns[c] = struct{}{}
		s.Active.Add(1)
		return true
	}
	delete(s.conns, c)
	s.Active.Add(-1)
	return true
}

// refusing reports whether s takes no request from a parked connection:
// closed, or closing without a hand-over to serve them.
func (s *Server) refusing() bool {
	return s.closed.Load() || s.closing.Load() && !s.handover.Load()
}

// toParker and fromParker move c between conns and the parker's count;
// parkedGone ends a parked connection. The count goes up before c leaves
// conns and down after it is back, so that Drain never sees neither.
func (s *Server) toParker(c *conn) {
	s.parked.Add(1)
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *Server) fromParker(c *conn) {
	s.mu.Lock()
	s.conns[c] = struct{}{}
	if s.closed.Load() {
		// Close has interrupted the connections it found; c was with
		// the parker then, and would outlive it.
		c.interrupt()
	}
	s.mu.Unlock()
	s.parked.Add(-1)
}

func (s *Server) parkedGone() {
	s.parked.Add(-1)
	s.Active.Add(-1)
}

// Shutdown stops accepting, closes idle connections at once and lets
// connections with a request in flight finish it (they close afterwards),
// until ctx ends; then it closes everything. This is Pound's Grace.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAccepting()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.closeIdle() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Drain is Shutdown for a binary upgrade, where another process now
// accepts on the same socket: it stops accepting and lets every
// connection end on its own terms, each after one more response at most
// ("Connection: close"), or when its Client timeout ends it, until ctx
// ends; then it closes everything. A keep-alive client is never closed
// while it may be sending a request.
func (s *Server) Drain(ctx context.Context) error {
	s.BeginDrain()
	// The accept loop may hold a connection it accepted as the socket
	// closed: once the loop has ended, every connection is counted.
	s.mu.Lock()
	loop := s.loop
	s.mu.Unlock()
	if loop != nil {
		select {
		case <-loop:
		case <-ctx.Done():
		}
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n += int(s.parked.Load()); n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// BeginDrain is the start of Drain: the socket is no longer accepted on
// and every response from now on says "Connection: close". It may be
// called before Drain, which calls it again.
func (s *Server) BeginDrain() {
	s.handover.Store(true)
	s.stopAccepting()
}

// Close stops accepting and closes every connection at once.
func (s *Server) Close() {
	s.closed.Store(true)
	s.stopAccepting()
	s.mu.Lock()
	for c := range s.conns {
		c.interrupt()
	}
	s.mu.Unlock()
	parking.closeServer(s)
}

func (s *Server) stopAccepting() {
	s.mu.Lock()
	s.closing.Store(true)
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Unlock()
	s.shutdownH2C()
}

// closeIdle closes connections waiting for a request and returns how many
// connections remain.
func (s *Server) closeIdle() int {
	s.mu.Lock()
	for c := range s.conns {
		if c.idle.Load() {
			c.interrupt()
		}
	}
	n := len(s.conns)
	s.mu.Unlock()
	parking.closeServer(s)
	return n + int(s.parked.Load())
}

// edits returns the header rules for a request routed to svc: the
// listener's, then the service's (precomputed per service at build time).
func (l *Listener) edits(svc *service.Service) *HeaderEdits {
	if e, ok := l.SvcEdits[svc]; ok {
		return e
	}
	return l.Edits
}

// editsFor returns the header rules of the current request, looked up in
// the listener once and kept for the request's other heads.
func (c *conn) editsFor(st *Listener, svc *service.Service) *HeaderEdits {
	if c.ex.edits == nil {
		if c.ex.edits = st.edits(svc); c.ex.edits == nil {
			c.ex.edits = noEdits
		}
	}
	return c.ex.edits
}
