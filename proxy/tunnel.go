package proxy

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
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

// tunnel moves bytes both ways, with splice(2) between plain sockets,
// else by copying (TLS). A direction that reaches EOF half-closes its
// peer and the other goes on; an error in either ends both. The tunnel
// also ends when no byte has moved either way for idle, as with Pound's
// one poll(2) over both sockets: a quiet direction alone does not end it.
func tunnel(client net.Conn, be net.Conn, idle time.Duration) {
	// One object for what both directions share: the clock and the
	// wait for the second goroutine.
	var run struct {
		k  idleClock
		wg sync.WaitGroup
	}
	run.k.idle = idle
	run.k.touch()
	run.wg.Add(1)
	go func() {
		defer run.wg.Done()
		pump(be, client, &run.k)
	}()
	pump(client, be, &run.k)
	run.wg.Wait()
}

// pump copies src to dst until EOF, then half-closes dst; on an error
// it closes both sockets so that the other direction stops too.
func pump(dst, src net.Conn, k *idleClock) {
	handled, err := spliceCopy(dst, src, k)
	if !handled {
		err = copyIdle(dst, src, k)
	}
	if err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
}

// copyIdle is the copying path of pump, through a pooled buffer.
func copyIdle(dst, src net.Conn, k *idleClock) error {
	bp := ioPool.Get().(*[]byte)
	defer ioPool.Put(bp)
	buf := *bp
	for {
		src.SetReadDeadline(k.deadline())
		n, err := src.Read(buf)
		if n > 0 {
			k.touch()
			dst.SetWriteDeadline(k.writeDeadline())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil && k.keepWaiting(err):
		case err != nil:
			return err
		}
	}
}

// idleClock is when a tunnel last moved a byte in either direction.
type idleClock struct {
	idle time.Duration
	last atomic.Int64 // UnixNano
}

func (k *idleClock) touch() { k.last.Store(time.Now().UnixNano()) }

// deadline is when a read gives up unless a byte moves meanwhile.
func (k *idleClock) deadline() time.Time {
	if k.idle <= 0 {
		return time.Time{}
	}
	return time.Unix(0, k.last.Load()+int64(k.idle))
}

// writeDeadline bounds one write: a peer that reads nothing for idle
// ends the tunnel.
func (k *idleClock) writeDeadline() time.Time {
	if k.idle <= 0 {
		return time.Time{}
	}
	return time.Now().Add(k.idle)
}

// keepWaiting reports whether a read that ended with err should wait
// again: it timed out, but the other direction moved bytes since.
func (k *idleClock) keepWaiting(err error) bool {
	return isTimeout(err) && time.Since(time.Unix(0, k.last.Load())) < k.idle
}
