package proxy

import (
	"errors"
	"net"
	"os"
	"time"

	"lbd/backend"
	"lbd/config"
	"lbd/http1"
	"lbd/service"
)

// Why a request could not be served by a backend; each maps to one status.
var (
	errNoBackend   = errors.New("no backend")
	errBackendIO   = errors.New("backend I/O error")
	errTimeout     = errors.New("backend timeout")
	errClientIO    = errors.New("client I/O error")
	errBadRequest  = errors.New("malformed request body")
	errBadResponse = errors.New("malformed backend response")
)

const continue100 = "HTTP/1.1 100 Continue\r\n\r\n"

// forward sends the request to a backend and relays the response. It
// reports whether the client connection is still in a clean state.
func (c *conn) forward(st *Listener, svc *service.Service) bool {
	h2 := svc.HTTP2
	if svc.ALPN != nil { // Protocol auto: what the backends chose
		var known bool
		if h2, known = svc.ALPN.Decide(svc.Backends); !known {
			return c.failCause(st, 503, CauseNoBackend)
		}
	}
	if h2 && c.http2 {
		return c.forwardH2Frames(st, svc)
	}
	if h2 {
		return c.forwardHTTP2(st, svc)
	}
	req := &c.req
	c.ex.scripted = hasResponseScripts(st, svc)
	c.out = c.appendRequestHead(st, svc, c.out[:0])
	if c.ex.badExpand {
		return c.fail(st, 500)
	}
	if c.ex.cache != nil {
		c.cacheConditionals()
	}
	c.r += req.HeadLen
	headLen := len(c.out)
	whole, err := c.appendBufferedBody()
	if err != nil {
		return c.failStatus(st, err)
	}
	if c.ex.waf != nil && hasBody(req) {
		if done, ok := c.wafRequestBody(st, headLen, &whole); done {
			return ok
		}
	}
	if c.ex.scripted {
		c.keepBody(svc, c.out[headLen:], whole)
	} else if c.rs.Script.Owner != nil {
		c.rs.EndScripts() // no script runs after this: the state is free
	}
	for {
		ok := c.attempt(st, svc, whole)
		if !c.ex.resend {
			return ok
		}
		var again bool
		if svc, again, ok = c.resend(st, svc); !again {
			return ok
		}
		whole = true
	}
}

// attempt sends the request (c.out, and the rest of the body unless
// whole) and relays the response.
func (c *conn) attempt(st *Listener, svc *service.Service, whole bool) bool {
	req := &c.req
	key := svc.SessionKey(req, c.client, c.key[:0])
	bp := ioPool.Get().(*[]byte)
	defer ioPool.Put(bp)
	rb := *bp
	isHEAD := c.req.MethodID == http1.MethodHEAD
	// A whole request goes out with WriteRead, which reads the start of
	// the answer into pre without first trying a read that must fail.
	// HTTP/2 streams keep their own read (readResponseHead).
	var pre []byte
	if whole && !c.http2 {
		pre = rb[headRoom:]
	}
	for fresh := false; ; fresh = true {
		bc, err := c.send(st, svc, key, whole, fresh, pre)
		if err != nil {
			return c.failStatus(st, err)
		}
		if !whole {
			if err := c.streamRequestBody(st, bc); err != nil {
				bc.Close()
				return c.failStatus(st, err)
			}
		}
		n, err := c.readResponseHead(bc, rb[headRoom:], isHEAD)
		if err == nil {
			return c.relay(st, svc, bc, rb, n)
		}
		bc.Close()
		c.ex.be.Done(bc, 0, time.Since(c.ex.start))
		if !fresh && n == 0 && bc.Reused() && whole && retryable(req.MethodID) && !errors.Is(err, errTimeout) {
			continue // the backend had closed the idle connection we reused
		}
		return c.failStatus(st, err)
	}
}

// retryable reports whether a request may be sent again after a reused
// connection failed before any response byte: only idempotent methods,
// as HAProxy, nginx and Go's Transport do.
func retryable(m http1.Method) bool {
	switch m {
	case http1.MethodGET, http1.MethodHEAD, http1.MethodOPTIONS, http1.MethodTRACE:
		return true
	}
	return false
}

// send offers the request head (and the buffered body) to backends until
// one takes it. Retrying is safe here: either nothing reached a backend
// (dial failure), or the write failed on a reused keep-alive connection
// whose peer had closed it, before any response byte. With pre (a whole
// request) the first read of the answer is made too, into pre, and its
// outcome left in c.ex for readResponseHead.
func (c *conn) send(st *Listener, svc *service.Service, key []byte, whole, fresh bool, pre []byte) (*backend.Conn, error) {
	tries := st.tries()
	var last error = errNoBackend
	for i := 0; i < tries; i++ {
		b := c.pick(svc, key)
		if b == nil {
			return nil, last
		}
		c.out = c.bindBackend(st, svc, b, c.out) // backend-dependent headers
		c.out = c.bindServerName(b, c.out)
		var bc *backend.Conn
		reused := false
		if !fresh {
			bc, reused = b.Get()
		}
		if !reused {
			var err error
			// No deadline of our own: the backend's ConnTO bounds the
			// connect, and a connect that times out on it marks the
			// backend dead (one cut short by a caller's deadline would
			// not).
			if bc, err = b.Dial(time.Time{}); err != nil {
				last = errNoBackend
				continue
			}
		}
		backendWrite(bc, c.now, b.TimeOut())
		if err := c.write(bc, pre, b.TimeOut()); err != nil {
			bc.Close()
			last = errBackendIO
			if reused {
				i-- // a stale pooled connection is not a backend failure
			}
			continue
		}
		c.ex.be = b
		svc.Pin(key, b)
		if !whole && c.req.Expect100 && !fresh && !c.ex.continued {
			// The deadline in force may be an old one: a connection
			// resumed from the parker has its last write's.
			c.dl.forWrite(c.nc, time.Now(), st.Client)
			// A client that cannot take the interim response fails the
			// body read that follows, which ends the exchange.
			_, _ = c.nc.Write(continueBody) // a failure fails the body read next (above)
		}
		return bc, nil
	}
	return nil, last
}

// write sends c.out to bc; with pre, by WriteRead, which also reads.
func (c *conn) write(bc *backend.Conn, pre []byte, timeout time.Duration) error {
	if pre == nil {
		_, err := bc.Write(c.out)
		return err
	}
	n, sent, err := bc.WriteRead(c.out, pre, c.now, timeout)
	if !sent {
		return err
	}
	c.now = time.Now() // as after every backend read (readResponseHead)
	c.ex.preRead, c.ex.preN, c.ex.preErr = true, n, err
	return nil
}

// failStatus maps a forwarding error to the answer the client gets.
func (c *conn) failStatus(st *Listener, err error) bool {
	if c.ex.cache != nil && !errors.Is(err, errClientIO) && !errors.Is(err, errBadRequest) {
		if done, ok := c.cacheFailed(st); done {
			return ok // stale-if-error
		}
	}
	switch {
	case errors.Is(err, errClientIO):
		c.ex.status = 0
		return false
	case errors.Is(err, errBadRequest):
		return c.fail(st, 400)
	case errors.Is(err, errBodyTooSlow):
		return c.fail(st, 408)
	case st.Dialect != config.DialectZproxy:
		return c.fail(st, 503)
	case errors.Is(err, errTimeout):
		return c.fail(st, 504)
	case errors.Is(err, errBadResponse):
		return c.fail(st, 500) // zproxy: a response it cannot parse
	}
	return c.failCause(st, 503, CauseNoBackend)
}

// isTimeout tells a deadline expiry from other I/O errors.
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// appendBufferedBody appends to c.out the request body bytes that already
// sit in the read buffer, so that a small request goes to the backend in
// one write. It reports whether the whole body was appended.
func (c *conn) appendBufferedBody() (bool, error) {
	req := &c.req
	avail := (*c.buf)[c.r:c.w]
	switch {
	case req.Chunked:
		c.chunk.Reset()
		n, done, err := c.chunk.Scan(avail)
		if err != nil {
			return false, errBadRequest
		}
		c.out = append(c.out, avail[:n]...)
		c.r += n
		return done, nil
	case req.ContentLength > 0:
		n := int64(len(avail))
		if n > req.ContentLength {
			n = req.ContentLength
		}
		c.out = append(c.out, avail[:n]...)
		c.r += int(n)
		c.ex.bytes = n // request body bytes sent so far (reset before relay)
		return n == req.ContentLength, nil
	}
	return true, nil
}
