package proxy

import (
	"io"
	"net"
	"runtime"
	"time"

	"lbd/backend"
	"lbd/config"
	"lbd/http1"
	"lbd/rules"
	"lbd/service"
)

// headRoom is kept free in front of the backend response in the I/O
// buffer, so the rewritten head can be placed right before the body bytes
// and both go to the client in one write.
const headRoom = 2048

// relay reads the backend's response and sends it to the client. It
// reports whether the client connection can carry another request.
func (c *conn) relay(st *Listener, svc *service.Service, bc *backend.Conn, rb []byte, n int) bool {
	b := c.ex.be
	isHEAD := c.req.MethodID == http1.MethodHEAD
	resp := &c.resp
	if resp.Status == 101 {
		return c.upgrade(st, bc, rb[headRoom:headRoom+n])
	}
	kind := resp.BodyKind(isHEAD)
	// A server that stops (Grace, a binary upgrade) closes after this
	// response, and says so in it.
	keep := c.req.KeepAlive && kind != http1.BodyUntilClose && !c.srv.closing.Load()
	if st.Dialect == config.DialectZproxy && !resp.KeepAlive {
		// zproxy ends the client connection with the backend's.
		keep = false
	}
	c.ex.status = resp.Status
	c.ex.bytes = 0
	if c.ex.cache != nil {
		if done, ok := c.cacheResponse(st, bc, kind, rb, n); done {
			return ok
		}
	}
	if c.ex.waf != nil {
		v, inspect := c.wafResponseHead(st, kind)
		if v != nil {
			return c.wafHeldVerdict(st, bc, v)
		}
		c.ex.wafResp = inspect
	}

	if c.rewritesError(st, svc, resp.Status) {
		// RewriteErrors: the listener's ErrorFile page replaces the
		// backend's error; its body is not read, so the connection goes.
		bc.Close()
		b.Done(bc, resp.Status, time.Since(c.ex.start))
		return c.fail(st, resp.Status)
	}
	c.learnSession(svc, b)
	mode := connKeep
	if !keep {
		mode = connClose
	}
	head := c.appendResponseHead(st, c.out[:0], mode)
	if head == nil { // a response rule failed: Pound answers 500
		bc.Close()
		b.Done(bc, resp.Status, time.Since(c.ex.start))
		return c.fail(st, 500)
	}
	if c.ex.scripted && c.rs.X.Status != 0 {
		if c.rs.X.Resend.Mode != rules.ResendNone {
			c.ex.resend = true
			c.discardResponse(bc, kind, rb, n)
			return true
		}
		c.ex.status = c.rs.X.Status
		if c.ex.newBody {
			return c.sendNewBody(st, bc, kind, rb, n, head, keep)
		}
	}
	c.out = head
	body := rb[headRoom+resp.HeadLen : headRoom+n]
	first, complete, clean, err := c.bodyPrefix(kind, body)
	if err != nil {
		bc.Close()
		return c.failStatus(st, errBadResponse)
	}
	if c.ex.wafResp {
		// What came with the head is held until the WAF has seen it.
		if v := c.wafResponseBody(st, first, complete); v != nil {
			return c.wafHeldVerdict(st, bc, v)
		}
	}
	if c.ex.cache != nil {
		c.cacheBody(first)
	}
	// Place the head right before the first body bytes when it fits.
	start := headRoom + resp.HeadLen - len(head)
	var werr error
	c.dl.forWrite(c.nc, c.now, st.Client)
	if start >= 0 {
		copy(rb[start:], head)
		werr = c.writeClient(rb[start : headRoom+resp.HeadLen+len(first)])
	} else if werr = c.writeClient(head); werr == nil && len(first) > 0 {
		werr = c.writeClient(first)
	}
	c.ex.bytes = int64(len(first))
	if werr != nil {
		// The client is gone; a backend connection that delivered its
		// whole response is as good as ever (clients that leave with a
		// request in flight would otherwise cost a connect each).
		b.Done(bc, resp.Status, time.Since(c.ex.start))
		if complete && clean && resp.KeepAlive && c.req.MethodID != http1.MethodCONNECT {
			b.Put(bc)
		} else {
			bc.Close()
		}
		return false
	}
	if !complete {
		clean, err = c.streamResponseBody(st, bc, kind, rb)
	}
	if c.ex.cache != nil {
		c.ex.cache.Finish(err == nil)
	}
	b.Done(bc, resp.Status, time.Since(c.ex.start))
	// A CONNECT is never reused: its backend may have made a tunnel of it.
	if err == nil && clean && resp.KeepAlive && c.req.MethodID != http1.MethodCONNECT {
		b.Put(bc)
	} else {
		bc.Close()
	}
	if err == errWAFCut {
		c.wafCut(st, kind)
		return false
	}
	// A body cut short by the backend must not look complete to the
	// client. For a close-delimited body a plain close would say
	// "complete", so the connection is reset instead.
	if err != nil && err != errClientIO {
		c.abort()
	}
	return err == nil && keep
}

// readResponseHead reads into buf until it holds a complete final
// response head; interim 1xx responses other than 101 are dropped
// (lbd answers Expect: 100-continue itself). It returns the bytes read.
// The first read may have been made by send (WriteRead: c.ex.preRead).
func (c *conn) readResponseHead(bc *backend.Conn, buf []byte, isHEAD bool) (int, error) {
	timeout := c.ex.be.TimeOut()
	n := 0
	pre := c.ex.preRead
	c.ex.preRead = false
	// The kernel said more followed the bytes WriteRead read; that only
	// means something while no other read follows (bodyPrefix).
	c.ex.unread = pre && bc.Unread()
	for {
		if n > 0 {
			err := http1.ParseResponseHead(buf[:n], &c.resp, isHEAD)
			if err == nil {
				if c.resp.Status >= 200 || c.resp.Status == 101 {
					return n, nil
				}
				n = copy(buf, buf[c.resp.HeadLen:n])
				continue
			}
			if err != http1.ErrNeedMore || n == len(buf) {
				return n, errBadResponse
			}
		}
		var k int
		var err error
		if pre {
			k, err, pre = c.ex.preN, c.ex.preErr, false
		} else {
			c.ex.unread = false
			backendRead(bc, c.now, timeout)
			if n == 0 && c.http2 {
				// The request just went out; the response is not there yet.
				// Letting the connection's other streams run first means
				// this read usually finds it, instead of failing with EAGAIN
				// and waiting: fewer system calls and larger batches for
				// the HTTP/2 writer. (HTTP/1.1 clients wait in WriteRead;
				// there each conn is its own.)
				runtime.Gosched()
			}
			k, err = bc.Read(buf[n:])
			// The client's write deadline is reckoned from c.now: after a
			// slow backend, the time the request was read is long past.
			c.now = time.Now()
		}
		n += k
		if k == 0 && err != nil {
			if isTimeout(err) {
				return n, errTimeout
			}
			return n, errBackendIO
		}
	}
}

// bodyPrefix splits the body bytes that arrived with the head: first is
// what belongs to this response, complete says the body is entirely in
// it, clean says no stray bytes followed (else the backend connection is
// not reused).
func (c *conn) bodyPrefix(kind http1.BodyKind, body []byte) (first []byte, complete, clean bool, err error) {
	first, complete, clean, err = c.splitBody(kind, body)
	if complete && c.ex.unread {
		clean = false // a FIN or stray bytes came behind the response
	}
	return first, complete, clean, err
}

func (c *conn) splitBody(kind http1.BodyKind, body []byte) (first []byte, complete, clean bool, err error) {
	switch kind {
	case http1.BodyNone:
		return nil, true, len(body) == 0, nil
	case http1.BodyLength:
		cl := c.resp.ContentLength
		if int64(len(body)) >= cl {
			return body[:cl], true, int64(len(body)) == cl, nil
		}
		return body, false, true, nil
	case http1.BodyChunked:
		c.chunk.Reset()
		n, done, err := c.chunk.Scan(body)
		if err != nil {
			return nil, false, false, err
		}
		return body[:n], done, n == len(body), nil
	}
	return body, false, false, nil // until close
}

// streamResponseBody relays the rest of the body. clean reports that the
// backend connection ended exactly at the body's end.
func (c *conn) streamResponseBody(st *Listener, bc *backend.Conn, kind http1.BodyKind, buf []byte) (bool, error) {
	rto := c.ex.be.TimeOut()
	switch kind {
	case http1.BodyLength:
		n, err := c.copyN(st, bc, c.resp.ContentLength-c.ex.bytes, buf, rto, st.Client)
		c.ex.bytes += n
		return err == nil, err
	case http1.BodyChunked:
		return c.copyChunked(st, bc, buf, rto)
	}
	// Close-delimited: relay until the backend closes.
	for {
		backendRead(bc, time.Now(), rto)
		k, err := bc.Read(buf)
		if k > 0 {
			if c.ex.wafResp {
				if werr := c.wafBodyPiece(st, buf[:k], false); werr != nil {
					return false, werr
				}
			}
			c.dl.forWrite(c.nc, time.Now(), st.Client)
			if werr := c.writeClient(buf[:k]); werr != nil {
				return false, errClientIO
			}
			if c.ex.cache != nil {
				c.cacheBody(buf[:k])
			}
			c.ex.bytes += int64(k)
		}
		if err != nil {
			switch {
			case err == io.EOF:
				if c.ex.wafResp {
					// All of it was sent: a verdict now can only cut.
					if werr := c.wafBodyPiece(st, nil, true); werr != nil {
						return false, werr
					}
				}
				return false, nil // the backend's close ends this body
			case isTimeout(err):
				return false, errTimeout
			}
			return false, errBackendIO
		}
	}
}

// copyChunked relays a chunked body as it arrives, validating its framing
// so that the end of the body (and so the reusability of the backend
// connection) is known exactly.
func (c *conn) copyChunked(st *Listener, bc *backend.Conn, buf []byte, rto time.Duration) (bool, error) {
	for {
		backendRead(bc, time.Now(), rto)
		k, err := bc.Read(buf)
		if k > 0 {
			n, done, serr := c.chunk.Scan(buf[:k])
			if serr != nil {
				return false, errBadResponse
			}
			if c.ex.wafResp {
				if werr := c.wafBodyPiece(st, buf[:n], done); werr != nil {
					return false, werr
				}
			}
			c.dl.forWrite(c.nc, time.Now(), st.Client)
			if werr := c.writeClient(buf[:n]); werr != nil {
				return false, errClientIO
			}
			if c.ex.cache != nil {
				c.cacheBody(buf[:n])
			}
			c.ex.bytes += int64(n)
			if done {
				return n == k, nil
			}
		}
		if err != nil {
			if isTimeout(err) {
				return false, errTimeout
			}
			return false, errBackendIO
		}
	}
}

// abort makes the coming close of the client connection a reset (RST),
// which no client mistakes for the end of a close-delimited body.
func (c *conn) abort() {
	nc := c.nc
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS
		nc = u.NetConn()
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

// rewritesError reports whether a backend's error status is answered
// with the listener's ErrorFile page instead (Pound 4 RewriteErrors: the
// service's setting, else the listener's).
func (c *conn) rewritesError(st *Listener, svc *service.Service, status int) bool {
	if status < 400 || status > 599 || !st.Errors.Custom(status) {
		return false
	}
	if svc.Cfg != nil && svc.Cfg.Rare().RewriteErrors != nil {
		return *svc.Cfg.Rare().RewriteErrors
	}
	return st.Cfg != nil && st.Cfg.RewriteErrors
}
