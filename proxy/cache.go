package proxy

import (
	"bytes"
	"errors"
	"io"
	"time"

	"lbd/backend"
	"lbd/cache"
	"lbd/http1"
	"lbd/service"
)

// The shared cache (package cache) sits between the access rules and
// balancing for the services that have one (svc.Cache): serveRequest
// calls cached instead of forward. A hit is answered from the stored
// response, through the same response rules as a relayed one; a miss is
// forwarded, and the response is given to the cache as it streams to the
// client (relay's cacheResponse, the copy loops' cacheBody). A service
// without a cache never reaches this file.

// cached serves a request of a service with a cache.
func (c *conn) cached(st *Listener, svc *service.Service) bool {
	if hasResponseScripts(st, svc) {
		// A response script may rewrite what would be stored.
		return c.forward(st, svc)
	}
	if c.cacheTx == nil {
		c.cacheTx = new(cache.Tx) // once per connection that meets a cache
	}
	tx := c.cacheTx
	svc.Cache.BeginIn(tx, &c.req)
	c.ex.cache = tx
	switch tx.Action {
	case cache.Hit:
		tx.CheckConditional(&c.req)
		if tx.Background {
			c.refreshLater(st, svc, tx)
		}
		ok := c.serveStored(st, tx)
		c.logRequest(st)
		c.r += c.req.HeadLen
		return ok
	case cache.Refuse:
		return c.fail(st, 504) // only-if-cached (RFC 9111 §5.2.1.7)
	}
	return c.forward(st, svc)
}

// cacheEnd ends the request's cache transaction (handle calls it after
// every request that had one).
func (c *conn) cacheEnd() {
	c.ex.cache.Finish(false)
	c.ex.cache.Done()
	c.ex.cache = nil
}

// serveStored answers with the stored response of tx, as the backend's
// would be: the response rules apply, the connection lines are lbd's.
func (c *conn) serveStored(st *Listener, tx *cache.Tx) bool {
	status := tx.Status()
	isHEAD := c.req.MethodID == http1.MethodHEAD
	bp := ioPool.Get().(*[]byte)
	defer ioPool.Put(bp)
	h := tx.AppendHead((*bp)[:0])
	h = append(tx.AppendStatus(h), crlf...)
	if err := http1.ParseResponseHead(h, &c.resp, isHEAD); err != nil {
		st.diag(err)
		return c.fail(st, 500)
	}
	keep := c.req.KeepAlive && !c.srv.closing.Load()
	mode := connClose
	if keep {
		mode = connKeep
	}
	c.keep = c.keep[:0]
	if c.out = c.appendResponseHead(st, c.out[:0], mode); c.out == nil {
		return c.fail(st, 500) // a response rule failed to expand
	}
	c.ex.status = status
	body := tx.Body()
	if isHEAD {
		body = nil
	}
	c.dl.forWrite(c.nc, time.Now(), st.Client)
	if err := c.writeStored(body); err != nil {
		c.ex.status = 0
		return false
	}
	c.ex.bytes = int64(len(body))
	return keep
}

// writeStored writes the head in c.out and a stored body to the client.
func (c *conn) writeStored(body []byte) error {
	if len(body) <= 16<<10 {
		c.out = append(c.out, body...) // one write for a small object
		return c.writeClient(c.out)
	}
	// Head and body in one writev: a head sent alone would go as a
	// segment of its own ahead of the body. The body goes out from the
	// stored bytes (immutable), uncopied; the vector lives in the conn
	// so that the call does not allocate it.
	c.iov = [2][]byte{c.out, body}
	c.vec = c.iov[:]
	_, err := c.vec.WriteTo(c.nc)
	c.iov = [2][]byte{} // an evicted object is not kept alive by an idle connection
	return err
}

// cacheConditionals adds the stored response's validators to the head
// of a request that revalidates it (before the blank line).
func (c *conn) cacheConditionals() {
	tx := c.ex.cache
	if tx == nil || tx.Action != cache.Validate {
		return
	}
	n := len(c.out) - 2 // the head ends in CRLF CRLF
	c.out = append(tx.AppendConditionals(c.out[:n]), crlf...)
}

// cacheResponse gives the cache the backend's response head. It reports
// whether the stored response was served instead (a 304 that freshened
// it, or an error stale-if-error covers); ok is then as relay's.
func (c *conn) cacheResponse(st *Listener, bc *backend.Conn, kind http1.BodyKind, rb []byte, n int) (done, ok bool) {
	tx := c.ex.cache
	switch tx.Response(&c.req, &c.resp) {
	case cache.ServeStored:
		c.discardResponse(bc, kind, rb, n)
		ok := c.serveStored(st, tx)
		return true, ok
	case cache.Store:
		c.ex.cacheChunked = kind == http1.BodyChunked
		c.ex.cacheDechunk.reset()
	}
	c.ex.respExtra = tx.AppendStatus(c.ex.respExtra)
	return false, false
}

// cacheBody gives the cache body bytes as relayed (decoded when chunked).
func (c *conn) cacheBody(p []byte) {
	tx := c.ex.cache
	if !tx.Storing() {
		return
	}
	if c.ex.cacheChunked {
		c.ex.cacheData = c.ex.cacheDechunk.decode(c.ex.cacheData[:0], p)
		p = c.ex.cacheData
	}
	tx.Write(p)
}

// cacheFailed serves a stored response when the backend could not be
// reached and stale-if-error allows it.
func (c *conn) cacheFailed(st *Listener) (done, ok bool) {
	tx := c.ex.cache
	if tx == nil || !tx.Failed() {
		return false, false
	}
	return true, c.serveStored(st, tx)
}

// refreshLater revalidates a stale-while-revalidate hit in the
// background, with the request as it would be forwarded.
func (c *conn) refreshLater(st *Listener, svc *service.Service, tx *cache.Tx) {
	rt := tx.Refresh()
	head := c.appendRequestHead(st, svc, nil)
	if c.ex.badExpand || len(head) < 2 {
		rt.Finish(false)
		return
	}
	head = stripConditionals(head)
	head = append(rt.AppendConditionals(head[:len(head)-2]), crlf...)
	req := snapshotRequest(&c.req)
	go refresh(svc, rt, head, req)
}

// stripConditionals drops the client's own conditional lines from a
// request head: a background revalidation validates lbd's copy.
func stripConditionals(head []byte) []byte {
	out := make([]byte, 0, len(head))
	for len(head) > 0 {
		i := bytes.Index(head, []byte(crlf))
		if i < 0 {
			break
		}
		line := head[:i+2]
		head = head[i+2:]
		name, _, _ := bytes.Cut(line, []byte(":")) // only the name is compared; a colon-less line keeps all
		if http1.EqualFold(name, "If-None-Match") || http1.EqualFold(name, "If-Modified-Since") {
			continue
		}
		out = append(out, line...)
	}
	return out
}

// snapshotRequest copies what the cache reads of a request (its header
// fields, for Vary) out of the connection's buffers.
func snapshotRequest(r *http1.Request) *http1.Request {
	cp := &http1.Request{MethodID: http1.MethodGET, Headers: make([]http1.Header, len(r.Headers))}
	for i, h := range r.Headers {
		cp.Headers[i] = http1.Header{Name: bytes.Clone(h.Name), Value: bytes.Clone(h.Value)}
	}
	return cp
}

// refresh sends a background revalidation to one of the service's
// backends and gives the answer to the cache.
func refresh(svc *service.Service, rt *cache.Tx, head []byte, req *http1.Request) {
	complete := false
	defer func() { rt.Finish(complete) }()
	b := svc.Pick(nil)
	if b == nil {
		return
	}
	start := time.Now()
	bc, err := b.Dial(time.Time{})
	if err != nil {
		return
	}
	defer bc.Close()
	backendWrite(bc, start, b.TimeOut())
	if _, err := bc.Write(head); err != nil {
		return
	}
	var resp http1.Response
	buf := make([]byte, 64<<10)
	n, err := readRefreshHead(bc, b, buf, &resp)
	if err != nil {
		return
	}
	b.Done(bc, resp.Status, time.Since(start))
	if rt.Response(req, &resp) != cache.Store {
		return
	}
	complete = readRefreshBody(bc, b, &resp, buf, n, rt)
}

// readRefreshHead reads a final response head into buf.
func readRefreshHead(bc *backend.Conn, b *backend.Backend, buf []byte, resp *http1.Response) (int, error) {
	n := 0
	for {
		backendRead(bc, time.Now(), b.TimeOut())
		k, err := bc.Read(buf[n:])
		n += k
		perr := http1.ParseResponseHead(buf[:n], resp, false)
		switch {
		case perr == nil && resp.Status >= 200:
			return n, nil
		case perr == nil:
			n = copy(buf, buf[resp.HeadLen:n]) // an interim response
			continue
		case perr != http1.ErrNeedMore || n == len(buf):
			return n, errBadResponse
		case err != nil:
			return n, errBackendIO
		}
	}
}

// readRefreshBody reads the body of a background revalidation's response into
// the cache; it reports whether it came whole.
func readRefreshBody(bc *backend.Conn, b *backend.Backend, resp *http1.Response, buf []byte, n int, rt *cache.Tx) bool {
	kind := resp.BodyKind(false)
	var chunk http1.ChunkScanner
	var dc dechunker
	var left int64 = resp.ContentLength
	p := buf[resp.HeadLen:n]
	for {
		switch kind {
		case http1.BodyNone:
			return true
		case http1.BodyLength:
			p = p[:min(int64(len(p)), left)]
			rt.Write(p)
			if left -= int64(len(p)); left == 0 {
				return true
			}
		case http1.BodyChunked:
			k, done, err := chunk.Scan(p)
			if err != nil {
				return false
			}
			rt.Write(dc.decode(nil, p[:k]))
			if done {
				return true
			}
		default:
			rt.Write(p)
		}
		backendRead(bc, time.Now(), b.TimeOut())
		k, err := bc.Read(buf)
		p = buf[:k]
		if err != nil && k == 0 {
			return kind == http1.BodyUntilClose && errors.Is(err, io.EOF)
		}
	}
}

// cacheCheck tells what the service's cache would do with the request
// (a dry look-up: no counter, no waiting, no background revalidation).
func (x *explainer) cacheCheck(svc *service.Service) {
	x.check("cache", true, svc.Cache.Peek(&x.c.req))
}
