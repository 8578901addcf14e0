package proxy

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"lbd/cache"
	"lbd/http1"
	"lbd/rules"
)

const (
	// smallBuf is the read buffer every client connection keeps; heads
	// that do not fit borrow a large buffer for the one request.
	smallBuf = 8 << 10
	// largeBuf holds the biggest head allowed (64 KiB) plus slack.
	largeBuf = 72 << 10
	// ioBuf is the buffer one exchange borrows for the response and bodies.
	ioBuf = 32 << 10
)

var (
	smallPool = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}
	largePool = sync.Pool{New: func() any { b := make([]byte, largeBuf); return &b }}
	ioPool    = sync.Pool{New: func() any { b := make([]byte, ioBuf); return &b }}
	// Sized for typical messages; they grow once if a connection needs
	// more and are then reused. Idle connections are the bulk of memory
	// on a busy proxy, so nothing here is bigger than it has to be.
	headerPool = sync.Pool{New: func() any {
		return &headerArrays{req: make([]http1.Header, 0, 16), resp: make([]http1.Header, 0, 16)}
	}}
)

// statePool holds the request language's working state of connections
// that are parked or gone.
var statePool = sync.Pool{New: func() any { return new(rules.State) }}

// headerArrays are a connection's request and response header arrays
// and its head-building buffers, given back while it is parked.
type headerArrays struct {
	req, resp []http1.Header
	out, keep []byte
}

// conn is one client connection. Its buffers and request structure are
// reused for every request on the connection.
type conn struct {
	srv    *Server
	nc     net.Conn
	client netip.Addr
	idle   atomic.Bool
	dl     lazyDeadline // client read/write deadlines
	now    time.Time    // when the last client read returned
	// heldSince: resumed from the parker (TLS, parked whole), when the
	// wait for this request began; zero once a read brought bytes.
	heldSince time.Time

	buf  *[]byte       // read buffer: unread bytes are (*buf)[r:w]; nil while parked
	hdrs *headerArrays // what req and resp.Headers came from; nil while parked
	r, w int
	big  bool // buf is a large pooled buffer

	req   http1.Request
	resp  http1.Response
	chunk http1.ChunkScanner
	out   []byte // outgoing head under construction
	ex    exchange
	key   [64]byte // scratch for session keys built from the address
	// keep holds the request head (and response reason) while a body
	// streams through the buffers they were parsed from (keep.go).
	keep []byte
	// http2: the client speaks HTTP/2 (see HTTP2Stream).
	http2 bool
	// h2x is the frame-level path's exchange, reused (h2framex.go).
	h2x *h2Exchange
	// rs is the request language's working state; rwbuf and rwLines
	// hold the forwarded head while request rules edit it (rules.go).
	rs      *rules.State // pooled: nil while parked
	rwbuf   []byte
	rwLines [][]byte
	// locSt is the listener of the response rs.Location (this conn)
	// rewrites a Location for.
	locSt *Listener
	// rsbuf and rsLines hold the response head while response rules
	// edit it; body keeps the request body for Lua (ContentCapture) and
	// for a resend (lua.go).
	rsbuf   []byte
	rsLines [][]byte
	body    []byte
	// raw: plain TCP connections are served from inside one
	// RawConn.Read (rawloop_linux.go).
	raw rawLoop
	// cacheTx is the request's cache transaction, reused (cache.go);
	// nil until the connection meets a service with a cache.
	cacheTx *cache.Tx
	iov     [2][]byte   // a stored hit's head and body, for one writev
	vec     net.Buffers // over iov
}

// connPool holds the conn structures of parked connections (recycle),
// for the connections accepted or resumed next.
var connPool = sync.Pool{New: func() any { return new(conn) }}

func newConn(s *Server, nc net.Conn) *conn {
	c := connPool.Get().(*conn)
	c.srv, c.nc, c.buf, c.now = s, nc, smallPool.Get().(*[]byte), time.Now()
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		c.client = ap.Addr().Unmap()
	}
	c.getHeaders()
	_, c.http2 = nc.(HTTP2Stream)
	c.initRaw(nc)
	return c
}

// HTTP2Stream is implemented by the connections on which package h2
// hands HTTP/2 streams over as HTTP/1.1 exchanges; access logs then show
// the client's protocol.
type HTTP2Stream interface{ HTTP2() }

func (c *conn) release() {
	c.nc.Close()
	c.putBuf()
	c.putHeaders()
	c.srv.track(c, false)
}

// recycle gives back a conn whose socket was handed to the parker
// (closed here), between requests: nothing is in flight, and nothing
// else refers to it. Only what every request starts afresh anyway is
// kept (grown scratch buffers, the h2 backend exchange, the cache
// transaction, the bound read callback), emptied; everything that
// belongs to the connection is cleared, so a struct reused for another
// client carries nothing of this one.
func (c *conn) recycle() {
	c.putBuf()
	c.putHeaders()
	clear(c.rwLines[:cap(c.rwLines)])
	clear(c.rsLines[:cap(c.rsLines)])
	*c = conn{
		ex:      exchange{respExtra: c.ex.respExtra[:0], wafData: c.ex.wafData[:0], cacheData: c.ex.cacheData[:0]},
		h2x:     c.h2x,
		rwbuf:   c.rwbuf[:0],
		rwLines: c.rwLines[:0],
		rsbuf:   c.rsbuf[:0],
		rsLines: c.rsLines[:0],
		body:    c.body[:0],
		cacheTx: c.cacheTx,
		raw:     c.raw.kept(),
	}
	connPool.Put(c)
}

func (c *conn) getHeaders() {
	c.rs = statePool.Get().(*rules.State)
	c.rs.Location = c
	c.hdrs = headerPool.Get().(*headerArrays)
	c.req.Headers, c.resp.Headers = c.hdrs.req[:0], c.hdrs.resp[:0]
	c.out, c.keep = c.hdrs.out[:0], c.hdrs.keep[:0]
}

// putHeaders gives the header arrays back (as grown) between requests.
// The parsed heads and the arrays' entries point into the read buffers:
// cleared, so they keep no buffer (given back already) alive.
func (c *conn) putHeaders() {
	if c.hdrs == nil {
		return
	}
	clear(c.req.Headers[:cap(c.req.Headers)])
	clear(c.resp.Headers[:cap(c.resp.Headers)])
	c.hdrs.req, c.hdrs.resp = c.req.Headers[:0], c.resp.Headers[:0]
	c.req, c.resp = http1.Request{}, http1.Response{}
	// The request language's state (1,400 bytes) is pooled too, cleared
	// of everything the last request left in it.
	c.rs.Forget()
	c.rs.Location = nil
	statePool.Put(c.rs)
	c.rs = nil
	c.hdrs.out, c.hdrs.keep = c.out[:0], c.keep[:0]
	headerPool.Put(c.hdrs)
	c.hdrs, c.req.Headers, c.resp.Headers, c.out, c.keep = nil, nil, nil, nil, nil
}

func (c *conn) putBuf() {
	if c.buf == nil {
		return
	}
	if c.big {
		largePool.Put(c.buf)
	} else {
		smallPool.Put(c.buf)
	}
	c.buf = nil
}

// serve handles requests until the client or the proxy closes.
func (c *conn) serve() {
	if c.rawOn() && !c.srv.state.Load().Tunnel {
		if !c.serveRaw() {
			c.release()
		}
		return
	}
	parked := false
	defer func() {
		if !parked {
			c.release()
		}
	}()
	if st := c.srv.state.Load(); st.Tunnel {
		c.serveTunnel(st)
		return
	}
	for {
		st := c.srv.state.Load()
		c.idle.Store(c.r == c.w)
		if c.srv.closing.Load() && c.r == c.w && !c.srv.handover.Load() {
			return
		}
		var err error
		if c.r == c.w && c.parksHeld(st) {
			// TLS: parked whole once idle (parkheld_linux.go).
			if parked, err = c.waitHeld(st); parked {
				return
			}
		}
		if err == nil {
			err = c.readHead(st)
		}
		c.idle.Store(false)
		if err != nil {
			c.headError(st, err)
			return
		}
		// A reload may have happened while this connection waited for
		// the request: route it with the configuration in force now.
		st = c.srv.state.Load()
		if !c.handle(st) {
			return
		}
		c.shrink()
	}
}

// errHeadTimeout answers a head that trickles in for longer than the
// Client timeout (HAProxy's "timeout http-request"): each read within
// the timeout is not enough, the whole head must be.
var errHeadTimeout = &http1.Error{Status: 408, Reason: "request head too slow"}

// readHead reads until buf[r:w] starts with a complete request head. The
// head must arrive within the Client timeout counted from its first byte.
func (c *conn) readHead(st *Listener) error {
	var first time.Time
	for {
		if c.w > c.r {
			if err := c.parseHead(st, &first); err != http1.ErrNeedMore {
				return err
			}
		}
		if err := c.fill(st.Client); err != nil {
			return err
		}
	}
}

// parseHead parses the buffered bytes as a request head. ErrNeedMore
// asks for more; a head still partial Client after its first bytes came
// (*first, set here) is errHeadTimeout. Shared by readHead and the raw
// loop, so both hold slow clients to the same rule.
func (c *conn) parseHead(st *Listener, first *time.Time) error {
	err := http1.ParseRequestHead((*c.buf)[c.r:c.w], &c.req, &st.Limits)
	if err != http1.ErrNeedMore {
		return err
	}
	switch {
	case first.IsZero():
		*first = c.now
	case st.Client > 0 && c.now.Sub(*first) > st.Client:
		return errHeadTimeout
	}
	return err
}

// prepareRead empties a fully consumed buffer and makes room at its end
// for the next read.
func (c *conn) prepareRead() {
	if c.buf == nil {
		c.buf, c.big = smallPool.Get().(*[]byte), false
	}
	if c.r == c.w {
		c.r, c.w = 0, 0
	}
	if c.w == len(*c.buf) {
		c.makeRoom()
	}
}

// errInline: see fill.
var errInline = errors.New("client read while serving inside the raw loop")

// fill reads more bytes into the buffer, compacting or growing it first.
func (c *conn) fill(timeout time.Duration) error {
	if c.raw.inside {
		// The raw loop holds the connection's read lock (servesInline
		// keeps requests that read more out of it): a Read would wait
		// for ever. Fail the request rather than hang.
		return errInline
	}
	c.prepareRead()
	c.dl.forRead(c.nc, c.now, timeout)
	n, err := c.nc.Read((*c.buf)[c.w:])
	c.now = time.Now()
	c.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// makeRoom moves unread bytes to the front, or switches to a large buffer
// when the small one is full of one head.
func (c *conn) makeRoom() {
	if c.r > 0 {
		copy(*c.buf, (*c.buf)[c.r:c.w])
		c.w -= c.r
		c.r = 0
		return
	}
	if c.big {
		return // the head limit check in http1 stops us before overflow
	}
	nb := largePool.Get().(*[]byte)
	copy(*nb, (*c.buf)[:c.w])
	smallPool.Put(c.buf)
	c.buf, c.big = nb, true
}

// shrink goes back to a small buffer after a large head was served.
func (c *conn) shrink() {
	if !c.big || c.w-c.r > smallBuf {
		return
	}
	nb := smallPool.Get().(*[]byte)
	c.w = copy(*nb, (*c.buf)[c.r:c.w])
	c.r = 0
	largePool.Put(c.buf)
	c.buf, c.big = nb, false
}

// headError answers a request that could not be read. Timeouts and EOF
// between requests close silently, as Pound does.
func (c *conn) headError(st *Listener, err error) {
	if c.serveH2C(st) {
		return
	}
	var he *http1.Error
	if errors.As(err, &he) {
		c.ex.cause = CauseNone
		c.writeError(st, he.Status)
		c.logGenerated(st, he.Status)
		return
	}
}

// writeError sends a generated error page; the connection closes after it.
func (c *conn) writeError(st *Listener, status int) {
	if c.grpcRequest() {
		c.writeGRPCError(st, status)
		return
	}
	// An error may come long after the request was read (a backend
	// timeout): its write deadline runs from now.
	c.dl.forWrite(c.nc, time.Now(), st.Client)
	c.srv.countGenerated(status)
	page := c.editGenerated(st, st.Errors.Page(c.req.Minor, status, c.ex.cause))
	c.nc.Write(c.withRetryAfter(page))
}

// head returns the bytes of the current request head.
func (c *conn) head() []byte {
	return (*c.buf)[c.r : c.r+c.req.HeadLen]
}
