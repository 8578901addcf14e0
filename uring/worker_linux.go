package uring

import (
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"lbd/backend"
	"lbd/http1"
	"lbd/proxy"
	"lbd/rules"
	"lbd/service"
)

// PROTOTYPE (issue 20): enough of the exchange to measure the ceiling of
// a completion-loop data path on the peers.sh workload: keep-alive
// requests without a body or with a body already received, responses
// framed by Content-Length, routed by the listener's real services and
// balancer and parsed by package http1. Everything else is answered 501
// (or 502 for a backend failure) and the connection closed. No timeouts,
// no logging, no rules, no sessions pinned.

// user_data: kind in the top byte, object id in the low 32 bits.
const (
	kAccept = iota + 1
	kClientRecv
	kClientSend
	kBackConnect
	kBackSend
	kBackRecv
	kTick
)

func ud(kind, id uint32) uint64 { return uint64(kind)<<56 | uint64(id) }

// cud tags a client connection's operation with its generation, so a
// late completion for a previous connection in the same slot is ignored.
func cud(kind uint32, c *cconn) uint64 { return uint64(kind)<<56 | uint64(c.gen)<<32 | uint64(c.id) }

const (
	inBuf    = 8 << 10
	respBuf  = 32 << 10
	headRoom = 1 << 10
)

// cconn is one client connection.
type cconn struct {
	id     uint32
	gen    uint16
	fd     int
	client netip.Addr
	in     []byte // request bytes are in[r:w]
	r, w   int
	req    http1.Request
	rs     rules.State
	key    [64]byte
	out    []byte // forwarded request head
	resp   []byte // headRoom + response buffer
	rw     int    // response bytes in resp[headRoom:headRoom+rw]
	hres   http1.Response
	parsed bool
	left   int64 // response body bytes still to come from the backend
	bc     *bconn
	be     *backend.Backend
	head   []byte // client response head scratch
	closeA bool   // close the client after the response
	live   bool
}

// bconn is one backend connection owned by the worker.
type bconn struct {
	id     uint32
	fd     int
	b      *backend.Backend
	reused bool
	sa     unix.RawSockaddrInet4
}

type worker struct {
	ring   *Ring
	srv    *proxy.Server
	lfd    int
	conns  []*cconn
	free   []uint32
	bconns []*bconn
	bfree  []uint32
	idle   map[*backend.Backend][]*bconn
	tick   unix.Timespec
	port   []byte
	stop   bool
	reqs   uint64
}

// Serve runs the completion loop for the listener ln of srv until srv
// closes. It returns handled=false (and serves nothing) when io_uring
// cannot be set up, so the caller falls back to the goroutine path.
func Serve(srv *proxy.Server, ln net.Listener) (bool, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return false, nil
	}
	runtime.LockOSThread() // SINGLE_ISSUER / DEFER_TASKRUN: one submitter thread
	defer runtime.UnlockOSThread()
	ring, err := New(4096)
	if err != nil {
		return false, nil
	}
	defer ring.Close()
	rc, err := tl.SyscallConn()
	if err != nil {
		return false, nil
	}
	w := &worker{ring: ring, srv: srv, idle: map[*backend.Backend][]*bconn{}}
	if err := rc.Control(func(fd uintptr) { w.lfd = int(fd) }); err != nil {
		return false, nil
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
		w.port = strconv.AppendUint(nil, uint64(ap.Port()), 10)
	}
	w.tick = unix.NsecToTimespec(int64(100 * time.Millisecond))
	ring.GetSQE().PrepAcceptMultishot(w.lfd, ud(kAccept, 0))
	ring.GetSQE().PrepTimeoutMulti(&w.tick, ud(kTick, 0))
	for !w.stop {
		if err := ring.SubmitAndWait(); err != nil {
			return true, err
		}
		ring.Reap(w.complete)
	}
	w.closeAll()
	return true, proxy.ErrServerClosed
}

func (w *worker) complete(c *CQE) {
	id := uint32(c.UserData)
	kind := c.UserData >> 56
	if kind >= kClientRecv && kind <= kBackRecv {
		cc := w.conns[id]
		if !cc.live || uint16(c.UserData>>32) != cc.gen {
			return // a late completion for a closed connection
		}
	}
	switch kind {
	case kAccept:
		if c.Res >= 0 {
			w.accepted(int(c.Res))
		}
		if c.Flags&cqeFMore == 0 && !w.srv.Closing() {
			w.ring.GetSQE().PrepAcceptMultishot(w.lfd, ud(kAccept, 0))
		}
	case kTick:
		if w.srv.Closing() {
			w.stop = true
		}
	case kClientRecv:
		w.clientRecv(w.conns[id], int(c.Res))
	case kClientSend:
		w.clientSent(w.conns[id], int(c.Res))
	case kBackConnect, kBackSend:
		// Only failures post a completion for these (skip-success); the
		// linked receive then completes with -ECANCELED and handles it.
	case kBackRecv:
		w.backRecv(w.conns[id], int(c.Res))
	}
}

func (w *worker) accepted(fd int) {
	// Nagle off, as Go's net package does for every TCP connection.
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return
	}
	var c *cconn
	if n := len(w.free); n > 0 {
		c = w.conns[w.free[n-1]]
		w.free = w.free[:n-1]
	} else {
		c = &cconn{id: uint32(len(w.conns)), in: make([]byte, inBuf), resp: make([]byte, headRoom+respBuf)}
		c.req.Headers = make([]http1.Header, 0, 16)
		c.hres.Headers = make([]http1.Header, 0, 16)
		w.conns = append(w.conns, c)
	}
	c.fd, c.r, c.w, c.live, c.bc = fd, 0, 0, true, nil
	c.gen++
	c.client = netip.Addr{}
	if sa, err := unix.Getpeername(fd); err == nil {
		if in4, ok := sa.(*unix.SockaddrInet4); ok {
			c.client = netip.AddrFrom4(in4.Addr)
		}
	}
	w.recvClient(c)
}

func (w *worker) recvClient(c *cconn) {
	if c.r == c.w {
		c.r, c.w = 0, 0
	}
	w.ring.GetSQE().PrepRecv(c.fd, c.in[c.w:], cud(kClientRecv, c))
}

func (w *worker) closeClient(c *cconn) {
	if !c.live {
		return
	}
	c.live = false
	unix.Close(c.fd)
	if c.bc != nil {
		w.closeBack(c.bc)
		c.bc = nil
	}
	w.free = append(w.free, c.id)
}

func (w *worker) clientRecv(c *cconn, n int) {
	if n <= 0 {
		w.closeClient(c)
		return
	}
	c.w += n
	w.process(c)
}

// process serves the request at in[r:w] if its head is complete.
func (w *worker) process(c *cconn) {
	st := w.srv.State()
	err := http1.ParseRequestHead(c.in[c.r:c.w], &c.req, &st.Limits)
	if err == http1.ErrNeedMore {
		if c.w == len(c.in) {
			if c.r == 0 {
				w.reply(c, 501) // prototype: no large-head buffer
				return
			}
			c.w = copy(c.in, c.in[c.r:c.w])
			c.r = 0
		}
		w.recvClient(c)
		return
	}
	if err != nil {
		w.reply(c, 400)
		return
	}
	if c.req.Chunked || c.req.ContentLength > int64(c.w-c.r-c.req.HeadLen) || c.req.Upgrade {
		w.reply(c, 501) // prototype: bodies must arrive with the head
		return
	}
	head := c.in[c.r : c.r+c.req.HeadLen]
	c.rs.Begin(c.client, st.Detached)
	c.rs.X.Minor, c.rs.X.Services = c.req.Minor, &st.Router
	service.LoadRequest(&c.rs, &c.req, head)
	svc, err := st.Router.Route(&c.rs)
	if err != nil || svc == nil || svc.UseSpecial() {
		w.reply(c, 503)
		return
	}
	b := svc.Pick(svc.SessionKey(&c.req, c.client, c.key[:0]))
	if b == nil || b.Network() != "tcp" {
		w.reply(c, 503)
		return
	}
	c.out = w.appendRequest(c, st.Forwarded, c.out[:0])
	body := max(c.req.ContentLength, 0)
	c.out = append(c.out, c.in[c.r+c.req.HeadLen:c.r+c.req.HeadLen+int(body)]...)
	c.r += c.req.HeadLen + int(body)
	c.closeA = !c.req.KeepAlive
	c.be = b
	w.forward(c, b, false)
}

// forward sends c.out to a connection to b (pooled unless fresh) and
// posts the receive of the response, linked so one enter does both.
func (w *worker) forward(c *cconn, b *backend.Backend, fresh bool) {
	c.rw, c.parsed, c.left = 0, false, 0
	var bc *bconn
	if l := w.idle[b]; !fresh && len(l) > 0 {
		bc = l[len(l)-1]
		w.idle[b] = l[:len(l)-1]
		bc.reused = true
	} else {
		var err error
		if bc, err = w.newBack(b); err != nil {
			w.reply(c, 503)
			return
		}
		s := w.ring.GetSQE()
		s.PrepConnect(bc.fd, unsafe.Pointer(&bc.sa), unix.SizeofSockaddrInet4, cud(kBackConnect, c))
		s.Flags = sqeIOLink | sqeSkipSuccess
	}
	c.bc = bc
	s := w.ring.GetSQE()
	s.PrepSend(bc.fd, c.out, cud(kBackSend, c))
	s.Flags = sqeIOLink | sqeSkipSuccess
	w.ring.GetSQE().PrepRecv(bc.fd, c.resp[headRoom:], cud(kBackRecv, c))
}

func (w *worker) newBack(b *backend.Backend) (*bconn, error) {
	ap, err := netip.ParseAddrPort(b.Address())
	if err != nil || !ap.Addr().Is4() {
		return nil, unix.EAFNOSUPPORT
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return nil, err
	}
	var bc *bconn
	if n := len(w.bfree); n > 0 {
		bc = w.bconns[w.bfree[n-1]]
		w.bfree = w.bfree[:n-1]
	} else {
		bc = &bconn{id: uint32(len(w.bconns))}
		w.bconns = append(w.bconns, bc)
	}
	bc.fd, bc.b, bc.reused = fd, b, false
	bc.sa = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().As4()}
	p := ap.Port()
	bc.sa.Port = p>>8 | p<<8 // network byte order
	return bc, nil
}

func (w *worker) closeBack(bc *bconn) {
	unix.Close(bc.fd)
	w.bfree = append(w.bfree, bc.id)
}

func (w *worker) backRecv(c *cconn, n int) {
	if !c.live {
		return
	}
	if n <= 0 {
		bc := c.bc
		c.bc = nil
		w.closeBack(bc)
		if bc.reused && c.rw == 0 {
			w.forward(c, c.be, true) // the backend closed the idle connection
			return
		}
		w.reply(c, 502)
		return
	}
	if c.parsed {
		w.relayBody(c, n)
		return
	}
	c.rw += n
	data := c.resp[headRoom : headRoom+c.rw]
	err := http1.ParseResponseHead(data, &c.hres, c.req.MethodID == http1.MethodHEAD)
	if err == http1.ErrNeedMore && c.rw < respBuf {
		w.ring.GetSQE().PrepRecv(c.bc.fd, c.resp[headRoom+c.rw:], cud(kBackRecv, c))
		return
	}
	kind := c.hres.BodyKind(c.req.MethodID == http1.MethodHEAD)
	if err != nil || (kind != http1.BodyLength && kind != http1.BodyNone) {
		w.reply(c, 502) // prototype: chunked and close-delimited unsupported
		return
	}
	c.parsed = true
	have := int64(c.rw - c.hres.HeadLen)
	if kind == http1.BodyLength {
		c.left = c.hres.ContentLength - have
	}
	if have > 0 && c.left < 0 {
		w.reply(c, 502) // more than Content-Length: not pipelined by us
		return
	}
	c.head = w.appendResponse(c, c.head[:0])
	start := headRoom + c.hres.HeadLen - len(c.head)
	if start < 0 {
		w.reply(c, 502)
		return
	}
	copy(c.resp[start:], c.head)
	w.sendClient(c, c.resp[start:headRoom+c.rw])
}

func (w *worker) relayBody(c *cconn, n int) {
	c.left -= int64(n)
	if c.left < 0 {
		w.reply(c, 502)
		return
	}
	w.sendClient(c, c.resp[headRoom:headRoom+n])
}

// sendClient sends part of the response; the next receive (from the
// backend for more body, or from the client for the next request) is
// linked behind it.
func (w *worker) sendClient(c *cconn, b []byte) {
	s := w.ring.GetSQE()
	s.PrepSend(c.fd, b, cud(kClientSend, c))
	if c.left > 0 {
		s.Flags = sqeIOLink | sqeSkipSuccess
		w.ring.GetSQE().PrepRecv(c.bc.fd, c.resp[headRoom:], cud(kBackRecv, c))
		return
	}
	w.reqs++
	if c.hres.KeepAlive {
		w.idle[c.be] = append(w.idle[c.be], c.bc)
	} else {
		w.closeBack(c.bc)
	}
	c.bc = nil
	if c.closeA || c.r < c.w {
		return // wait for the send: close, or serve the pipelined request
	}
	s.Flags = sqeIOLink | sqeSkipSuccess
	w.recvClient(c)
}

func (w *worker) clientSent(c *cconn, n int) {
	if !c.live {
		return
	}
	if n < 0 || c.closeA {
		w.closeClient(c)
		return
	}
	if c.r < c.w {
		w.process(c)
	}
}

// reply answers a generated status and closes the connection after it.
func (w *worker) reply(c *cconn, status int) {
	c.closeA = true
	if c.bc != nil {
		w.closeBack(c.bc)
		c.bc = nil
	}
	c.head = append(c.head[:0], "HTTP/1.1 "...)
	c.head = strconv.AppendInt(c.head, int64(status), 10)
	c.head = append(c.head, " \r\nContent-Length: 0\r\nConnection: close\r\n\r\n"...)
	w.ring.GetSQE().PrepSend(c.fd, c.head, cud(kClientSend, c))
}

func (w *worker) closeAll() {
	for _, c := range w.conns {
		w.closeClient(c)
	}
	for _, l := range w.idle {
		for _, bc := range l {
			unix.Close(bc.fd)
		}
	}
}
