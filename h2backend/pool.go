// Package h2backend carries requests to HTTP/2 backends: over TLS with
// ALPN "h2", or cleartext with prior knowledge (h2c), on a bounded pool
// of connections per backend, dialled by the backend's own dialer (so
// connect failures mark it dead as for HTTP/1.1). Two clients share the
// pool: Open, lbd's own frame-level client (conn.go), for the streams of
// HTTP/2 clients, which the proxy relays frame by frame; and RoundTrip,
// golang.org/x/net/http2's Transport, for the requests of HTTP/1.1
// clients and the gRPC health check.
package h2backend

//lint:file-ignore SA1019 x/net/http2's client (Transport, ClientConn, ConnPool) is what lbd uses for HTTP/2 backends, as its front end uses x/net's Framer; x/net v0.62 marks it deprecated in favour of net/http's own (Go 1.26 http.Transport.NewClientConn), to which it delegates from Go 1.27 on. Moving to it (the backend's dialer, with its accounting and ALPN check, behind http.Transport's DialContext and DialTLSContext) is left for later: see the hand-over note.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Defaults for Options fields left zero.
const (
	// DefaultMaxConns bounds the connections to one backend. Each takes
	// as many streams as the backend's SETTINGS_MAX_CONCURRENT_STREAMS
	// allow (100 for most servers, grpc-go: unlimited), so the default
	// carries thousands of concurrent requests.
	DefaultMaxConns = 16
	// DefaultMaxHeaderBytes bounds a response header block, as lbd's
	// HTTP/1.1 engine bounds a response head.
	DefaultMaxHeaderBytes = 64 << 10
	// pingAfter: a connection silent this long is PINGed, and closed
	// when the PING is not answered within pingTimeout.
	pingAfter   = 30 * time.Second
	pingTimeout = 15 * time.Second
	idleConnTTL = 90 * time.Second
)

// ErrPoolFull: every connection allowed is open and has no stream free.
var ErrPoolFull = errors.New("h2backend: every connection to the backend is at its stream limit")

// Options configure a Pool.
type Options struct {
	// Dial opens a connection to the backend (TLS already negotiated to
	// h2 for a TLS backend). Required.
	Dial func(ctx context.Context) (net.Conn, error)
	// TLS says the connections are encrypted: requests go out with
	// :scheme https, else http.
	TLS bool
	// MaxConns bounds the open connections; 0 = DefaultMaxConns.
	MaxConns int
	// MaxHeaderBytes bounds a response header block; 0 = default.
	MaxHeaderBytes int
	// ConnTO bounds a connect when the request has no earlier deadline.
	ConnTO time.Duration
}

// Pool is the connections to one HTTP/2 backend. It implements
// http2.ClientConnPool for its own Transport, which retries a request
// the backend refused unprocessed (GOAWAY, REFUSED_STREAM) on another
// connection.
type Pool struct {
	opts Options
	t    *http2.Transport

	mu      sync.Mutex
	conns   []*http2.ClientConn
	frames  []*conn // the frame-level client's (Open)
	dialing int     // connects in progress, counted against MaxConns
	closed  bool

	// frameDialing: Open is connecting; other Opens wait for dialed.
	frameDialing bool
	dialed       sync.Cond

	frameStreams, transportStreams atomic.Uint64
}

// New builds a Pool; it connects on first use.
func New(o Options) *Pool {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	p := &Pool{opts: o}
	p.dialed.L = &p.mu
	p.t = &http2.Transport{
		ConnPool:           p,
		AllowHTTP:          true,
		DisableCompression: true, // bodies pass through as the backend sent them
		MaxHeaderListSize:  uint32(o.MaxHeaderBytes),
		ReadIdleTimeout:    pingAfter,
		PingTimeout:        pingTimeout,
		IdleConnTimeout:    idleConnTTL,
	}
	return p
}

// Scheme is the :scheme requests to this backend carry.
func (p *Pool) Scheme() string {
	if p.opts.TLS {
		return "https"
	}
	return "http"
}

// RoundTrip sends req on one of the pool's connections. req.URL must
// carry Scheme() and any host; the response body streams as the backend
// sends it, and its trailers arrive in resp.Trailer at EOF. Cancelling
// req's context resets the stream (RST_STREAM CANCEL).
func (p *Pool) RoundTrip(req *http.Request) (*http.Response, error) {
	p.transportStreams.Add(1)
	return p.t.RoundTrip(req)
}

// GetClientConn implements http2.ClientConnPool: a connection with a
// stream reserved for the request, opening one when all are busy and
// the bound allows.
func (p *Pool) GetClientConn(req *http.Request, _ string) (*http2.ClientConn, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, net.ErrClosed
		}
		if cc := p.reserveLocked(); cc != nil {
			p.mu.Unlock()
			return cc, nil
		}
		if len(p.conns)+len(p.frames)+p.dialing >= p.opts.MaxConns {
			p.mu.Unlock()
			return nil, ErrPoolFull
		}
		p.dialing++
		p.mu.Unlock()
		cc, err := p.dial(req.Context())
		p.mu.Lock()
		p.dialing--
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		if p.closed {
			p.mu.Unlock()
			cc.Close()
			return nil, net.ErrClosed
		}
		p.conns = append(p.conns, cc)
	}
}

// reserveLocked takes a stream on the first connection that has one,
// dropping connections that will take no more (closed, or draining
// after a GOAWAY: their streams finish, new ones go elsewhere). A
// connection at its stream limit stays.
func (p *Pool) reserveLocked() *http2.ClientConn {
	kept := p.conns[:0]
	var got *http2.ClientConn
	for _, cc := range p.conns {
		if st := cc.State(); st.Closed || st.Closing {
			continue
		}
		kept = append(kept, cc)
		if got == nil && cc.ReserveNewRequest() {
			got = cc
		}
	}
	clear(p.conns[len(kept):])
	p.conns = kept
	return got
}

func (p *Pool) dial(ctx context.Context) (*http2.ClientConn, error) {
	if _, ok := ctx.Deadline(); !ok && p.opts.ConnTO > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.ConnTO)
		defer cancel()
	}
	nc, err := p.opts.Dial(ctx)
	if err != nil {
		return nil, err
	}
	cc, err := p.t.NewClientConn(newBatchConn(nc))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return cc, nil
}

// MarkDead implements http2.ClientConnPool: the Transport found cc
// broken.
func (p *Pool) MarkDead(cc *http2.ClientConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.conns {
		if c == cc {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			return
		}
	}
}

// Conns reports the open connections and the streams active on them.
func (p *Pool) Conns() (conns, streams int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cc := range p.conns {
		streams += cc.State().StreamsActive
	}
	for _, c := range p.frames {
		c.mu.Lock()
		streams += len(c.streams)
		c.mu.Unlock()
	}
	return len(p.conns) + len(p.frames), streams
}

// Close ends the pool: idle connections close now, busy ones once their
// streams end (a GOAWAY tells the backend). Later requests fail.
func (p *Pool) Close() {
	p.mu.Lock()
	conns, frames := p.conns, p.frames
	p.conns, p.frames, p.closed = nil, nil, true
	p.mu.Unlock()
	for _, c := range frames {
		c.shutdown()
	}
	for _, cc := range conns {
		go func() {
			// Shutdown waits for the streams; a context would only cut
			// them short, which a reload must not do.
			_ = cc.Shutdown(context.Background()) // its error is the conn's close error: nothing to do
		}()
	}
}
