package proxy

import (
	"bytes"
	"io"
	"net"
	"sync"
	"time"

	"lbd/h2"
)

// Cleartext HTTP/2 with prior knowledge (h2c, RFC 9113 §3.3) on a plain
// listener with HTTP2 on: a connection whose first bytes are the client
// preface fails to parse as HTTP/1.1, and is then served by package h2
// instead of answered with an error. HTTP/1.1 requests never look at
// it; listeners without the setting never build the h2 server.

// h2cPreface is the start of the HTTP/2 client connection preface.
const h2cPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// h2cServer is the Server's HTTP/2 server, built on first use.
type h2cServer struct {
	once sync.Once
	mu   sync.Mutex
	srv  *h2.Server
	shut bool
}

// serveH2C serves the connection as HTTP/2 when the listener allows it
// and the client sent the preface; it reports whether it did.
func (c *conn) serveH2C(st *Listener) bool {
	pending := (*c.buf)[c.r:c.w]
	if !st.H2C || !bytes.HasPrefix(pending, []byte(h2cPreface[:len("PRI * HTTP/2.0\r\n")])) {
		return false
	}
	srv := c.srv.h2cFor(st)
	if srv == nil {
		return true // the listener is stopping: the connection just closes
	}
	c.nc.SetDeadline(time.Time{})
	pc := &prefixConn{Conn: c.nc, pre: append([]byte(nil), pending...)}
	c.r, c.w = 0, 0
	srv.ServeConn(pc)
	return true
}

// h2cFor returns the Server's h2 server, nil once it stopped accepting.
func (s *Server) h2cFor(st *Listener) *h2.Server {
	h := &s.h2c
	h.once.Do(func() {
		srv := h2.New(h2.Options{Handoff: s.serveStream, IdleTimeout: st.Client})
		h.mu.Lock()
		h.srv = srv
		h.mu.Unlock()
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shut {
		return nil
	}
	return h.srv
}

// shutdownH2C sends GOAWAY on every h2c connection (stopAccepting).
func (s *Server) shutdownH2C() {
	h := &s.h2c
	h.mu.Lock()
	h.shut = true
	srv := h.srv
	h.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
	}
}

// serveStream serves a vconn of the h2c server as a client connection.
func (s *Server) serveStream(nc net.Conn) bool {
	c := newConn(s, nc)
	if !s.track(c, true) {
		return false
	}
	go c.serve()
	return true
}

// prefixConn replays the bytes read before the connection turned out
// to be HTTP/2.
type prefixConn struct {
	net.Conn
	pre []byte
}

// Lingering close: what the client sent last (a PING after its
// GOAWAY, say) is read and dropped for up to lingerTime, so the close
// does not turn into a reset that loses the frames lbd sent before it.
const (
	lingerTime  = time.Second
	lingerBytes = 64 << 10
)

// Close ends the sending side first and lingers (see lingerTime).
func (p *prefixConn) Close() error {
	if cw, ok := p.Conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_ = p.Conn.SetReadDeadline(time.Now().Add(lingerTime))          // an error only ends the lingering early
		_, _ = io.Copy(io.Discard, io.LimitReader(p.Conn, lingerBytes)) // likewise: Close below reports
	}
	return p.Conn.Close()
}

// PlainConn implements sockio.PlainConn: the HTTP/2 front end writes
// (and, after TakePrefix, reads) the socket itself when it is plain TCP.
func (p *prefixConn) PlainConn() net.Conn { return p.Conn }

// TakePrefix returns the bytes sniffed and not yet read, and forgets
// them: the caller reads them before the socket's.
func (p *prefixConn) TakePrefix() []byte {
	pre := p.pre
	p.pre = nil
	return pre
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
