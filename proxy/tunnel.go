package proxy

import (
	"io"
	"net"
	"time"

	"lbd/backend"
)

// upgrade handles a 101 from the backend. Only a WebSocket upgrade the
// client asked for is tunnelled; any other 101 (h2c, or one the client did
// not request) is refused, because a tunnel after it would smuggle
// unparsed bytes past the proxy.
func (c *conn) upgrade(st *Listener, bc *backend.Conn, got []byte) bool {
	b := c.ex.be
	if !c.req.Upgrade {
		bc.Close()
		b.Done(bc, 502, time.Since(c.ex.start))
		return c.failStatus(st, errBadResponse)
	}
	c.ex.status = 101
	head := c.appendResponseHead(st, c.out[:0], connUpgrade)
	if head == nil { // a response rule failed: Pound answers 500
		bc.Close()
		b.Done(bc, 500, time.Since(c.ex.start))
		return c.fail(st, 500)
	}
	c.out = head
	if _, err := c.nc.Write(head); err != nil {
		bc.Close()
		return false
	}
	if rest := got[c.resp.HeadLen:]; len(rest) > 0 {
		if _, err := c.nc.Write(rest); err != nil {
			bc.Close()
			return false
		}
	}
	if c.r < c.w { // bytes the client sent after its upgrade request
		if _, err := bc.Write((*c.buf)[c.r:c.w]); err != nil {
			bc.Close()
			return false
		}
		c.r = c.w
	}
	b.Done(bc, 101, time.Since(c.ex.start))
	tunnel(c.nc, bc.Conn, b.WSTimeOut())
	bc.Close()
	return false
}

// tunnel moves bytes both ways until either side closes or stays idle
// for idle (WSTimeOut): with splice(2) between plain sockets, else by
// copying (TLS).
func tunnel(client net.Conn, be net.Conn, idle time.Duration) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		if !spliceCopy(dst, src, idle) {
			io.Copy(idleWriter{dst, idle}, idleReader{src, idle})
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go cp(be, client)
	cp(client, be)
	<-done
}

// idleReader extends the read deadline before every read.
type idleReader struct {
	net.Conn
	idle time.Duration
}

func (r idleReader) Read(p []byte) (int, error) {
	r.Conn.SetReadDeadline(time.Now().Add(r.idle))
	return r.Conn.Read(p)
}

// idleWriter extends the write deadline before every write.
type idleWriter struct {
	net.Conn
	idle time.Duration
}

func (w idleWriter) Write(p []byte) (int, error) {
	w.Conn.SetWriteDeadline(time.Now().Add(w.idle))
	return w.Conn.Write(p)
}
