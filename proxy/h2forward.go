package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"lbd/backend"
	"lbd/h2backend"
	"lbd/service"
)

// Forwarding to HTTP/2 backends (config Protocol h2). The request has
// been read, routed and checked as any other; its head is built by the
// same code (header rules, X-Forwarded-For, rewrites) and then carried
// as one stream of package h2backend's pool, with the body streamed in
// both directions as it comes. The response goes back to the client as
// an HTTP/1.1 message with trailers, which package h2 turns into
// HEADERS, DATA and trailing HEADERS frames for an HTTP/2 client: gRPC
// passes through, and an HTTP/1.1 client gets the same response
// translated. None of this runs for HTTP/1.1 backends.

// StreamWatcher is implemented by the connections of package h2: the
// function given to OnGone is called when the client resets the current
// stream (or its connection ends), so that the backend's stream is
// reset at once even while nothing is being read or written. OnGone
// reports false when the stream is gone already; ForgetGone ends the
// watch.
type StreamWatcher interface {
	OnGone(func()) bool
	ForgetGone()
}

// StreamResetter is implemented by the connections of package h2: it
// resets the current stream with an HTTP/2 error code, as a backend
// reset the stream it answers on.
type StreamResetter interface{ ResetStream(code uint32) }

var (
	errGRPCDeadline = errors.New("grpc-timeout expired")
	errClientGone   = errors.New("client reset the stream")
)

// forwardHTTP2 sends the request to one of svc's HTTP/2 backends and
// relays the response. It reports whether the client connection is
// still in a clean state.
func (c *conn) forwardHTTP2(st *Listener, svc *service.Service) bool {
	req := &c.req
	c.out = c.appendRequestHead(st, svc, c.out[:0])
	if c.ex.badExpand {
		return c.fail(st, 500)
	}
	c.r += req.HeadLen
	headLen := len(c.out)
	key := svc.SessionKey(req, c.client, c.key[:0])
	x := newH2Exchange(c, st)
	defer x.stop()
	tries := st.tries()
	var last error = errNoBackend
	for i := 0; i < tries; i++ {
		b := c.pick(svc, key)
		if b == nil {
			break
		}
		c.out = c.bindBackend(st, svc, b, c.out[:headLen])
		c.out = c.bindServerName(b, c.out)
		hreq, err := x.request(b, c.out)
		if err != nil {
			return c.fail(st, 400)
		}
		b.StreamStarted()
		resp, err := b.HTTP2().RoundTrip(hreq)
		if err != nil {
			b.StreamEnded()
			b.Done(nil, 0, time.Since(c.ex.start))
			last = x.cause(err)
			if last == errNoBackend && !x.body.touched() {
				continue // nothing reached the backend: try another
			}
			break
		}
		c.ex.be = b
		svc.Pin(key, b)
		ok := x.relay(svc, resp)
		b.StreamEnded()
		b.Done(nil, c.ex.status, time.Since(c.ex.start))
		return ok && x.body.finished()
	}
	return c.failHTTP2(st, last)
}

// failHTTP2 answers a request no HTTP/2 backend took.
func (c *conn) failHTTP2(st *Listener, err error) bool {
	switch {
	case errors.Is(err, errClientGone):
		c.ex.status = 0
		return false
	case errors.Is(err, errGRPCDeadline), errors.Is(err, errTimeout):
		return c.fail(st, 504)
	case errors.Is(err, errBadRequest):
		return c.fail(st, 400)
	case errors.Is(err, errBadResponse):
		return c.fail(st, 502)
	}
	return c.failCause(st, 503, CauseNoBackend)
}

// h2Exchange is one request to an HTTP/2 backend.
type h2Exchange struct {
	c      *conn
	st     *Listener
	ctx    context.Context
	cancel context.CancelFunc
	body   *h2Body
	// grpcDeadline: the request's grpc-timeout ran out (deadline);
	// idleOut: no data moved either way for the backend's TimeOut (idle).
	grpcDeadline, idleOut atomic.Bool
	deadline, idle        *time.Timer
	idleFor               time.Duration
	// The frame-level path's (h2framex.go): x/net's path has ctx.
	frames
}

func newH2Exchange(c *conn, st *Listener) *h2Exchange {
	x := &h2Exchange{c: c, st: st}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	if v := c.req.HeaderValue([]byte("Grpc-Timeout")); v != nil {
		if d, ok := h2backend.ParseTimeout(v); ok {
			x.deadline = time.AfterFunc(d, func() {
				x.grpcDeadline.Store(true)
				x.cancel()
			})
		}
	}
	if w, ok := c.nc.(StreamWatcher); ok && !w.OnGone(x.cancel) {
		x.cancel()
	}
	x.body = newH2Body(c, st, x.activity)
	return x
}

// stop ends the exchange's timers and watcher.
func (x *h2Exchange) stop() {
	if w, ok := x.c.nc.(StreamWatcher); ok {
		w.ForgetGone()
	}
	if x.idle != nil {
		x.idle.Stop()
	}
	if x.deadline != nil {
		x.deadline.Stop()
	}
	x.cancel()
	x.body.abort()
}

// activity pushes the idle timeout back: data moved one way or the other.
func (x *h2Exchange) activity() {
	if x.onActivity != nil { // the frame-level path: see frames.lastActive
		x.lastActive.Store(time.Now().UnixNano())
		return
	}
	if x.idle != nil && x.idleFor > 0 {
		x.idle.Reset(x.idleFor)
	}
}

// cause classifies a failed round trip.
func (x *h2Exchange) cause(err error) error {
	var de *backend.DialError
	switch {
	case x.grpcDeadline.Load():
		return errGRPCDeadline
	case x.idleOut.Load():
		return errTimeout
	case x.body.failure() != nil:
		return x.body.failure()
	case x.ctx != nil && x.ctx.Err() != nil, x.ctx == nil && x.wasAborted():
		return errClientGone
	case errors.As(err, &de), errors.Is(err, h2backend.ErrPoolFull), errors.Is(err, h2backend.ErrUnprocessed):
		return errNoBackend
	}
	return errBadResponse
}

// request builds the stream's request from the forwarded HTTP/1.1 head.
// The head is copied into one string that every name and value slices,
// and the values share one backing array: a handful of allocations per
// request instead of two per field.
func (x *h2Exchange) request(b *backend.Backend, head []byte) (*http.Request, error) {
	hs := string(head)
	line, rest, _ := strings.Cut(hs, crlf) // no CRLF: a bare request line, checked below
	method, target, ok := strings.Cut(line, " ")
	target, _, ok2 := strings.Cut(target, " ")
	if !ok || !ok2 {
		return nil, errBadRequest
	}
	n := strings.Count(rest, crlf)
	h := make(http.Header, n+1)
	vals := make([]string, 0, n+1)
	var host string
	for len(rest) > 0 {
		var l string
		l, rest, _ = strings.Cut(rest, crlf) // the last line may lack its CRLF
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch {
		case strings.EqualFold(name, "Host"):
			host = value
		case hopByHopH2(name):
		default:
			k := http.CanonicalHeaderKey(name) // the head's names are canonical already: no copy
			if old, dup := h[k]; dup {
				h[k] = append(old, value)
				continue
			}
			vals = append(vals, value)
			h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
	}
	// A trailers-capable path all along: gRPC servers may insist on it.
	h["Te"] = []string{"trailers"}
	u := &url.URL{Scheme: b.HTTP2().Scheme(), Host: host, Opaque: target}
	if host == "" {
		u.Host = b.Address()
	}
	r := (&http.Request{Method: method, URL: u, Host: u.Host, Header: h,
		Proto: "HTTP/2.0", ProtoMajor: 2}).WithContext(x.ctx)
	r.ContentLength = x.body.length()
	if v := x.announcedTrailers(); v != nil && x.body.chunked {
		h["Trailer"] = []string{string(v)} // a body in hand: x/net announces its trailers itself
	}
	r.Trailer = x.body.requestTrailer()
	switch {
	case r.ContentLength != 0:
		r.Body = x.body
	case r.Trailer != nil:
		// x/net sends trailers after a body only: an empty one, then.
		r.Body, r.ContentLength = x.body, -1
	default:
		r.Body = http.NoBody
	}
	x.armIdle(b)
	return r, nil
}

// armIdle starts the idle timer: the backend's TimeOut without data
// either way cancels the exchange.
func (x *h2Exchange) armIdle(b *backend.Backend) {
	if t := b.TimeOut(); t > 0 {
		x.idleFor = t
		if x.idle == nil {
			x.idle = time.AfterFunc(t, func() {
				x.idleOut.Store(true)
				x.cancel()
			})
		}
	}
}

// hopByHopH2 lists the fields an HTTP/2 request must not carry (RFC
// 9113 §8.2.2) and those the Transport writes itself.
func hopByHopH2(name string) bool {
	for _, h := range [...]string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding",
		"Upgrade", "Te", "Http2-Settings", "Content-Length", "Expect"} {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	return false
}

// reasonFor is the reason phrase of an HTTP/2 status (which has none).
func reasonFor(status int) string {
	if r := http.StatusText(status); r != "" {
		return r
	}
	return "Status " + strconv.Itoa(status)
}
