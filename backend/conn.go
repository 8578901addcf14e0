package backend

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// connectShift gives the connect-time average zproxy's formula,
// avg = (avg+sample)/2.
const connectShift = 1

// epoch anchors monotonic timestamps; time.Since(epoch) never jumps with the
// wall clock and costs no allocation.
var epoch = time.Now()

func monoNow() int64 { return int64(time.Since(epoch)) }

// Conn is a connection to a backend. The engine may replace the embedded
// net.Conn with a wrapper (tls.Client) after Dial; the stale-connection check
// keeps using the raw socket captured at dial time. A Conn is owned by one
// goroutine between Get/Dial and Put/Close.
type Conn struct {
	net.Conn
	b         *Backend
	idleSince atomic.Int64 // monoNow() when parked; atomic for ReapIdle
	reuses    int          // times handed out again by Get
	requests  int          // Done calls made with this conn
	out       atomic.Bool  // checked out: counted in b.active
	peek      peeker       // non-blocking "closed while idle?" check
	wr        writeReader  // WriteRead on a plain TCP socket
	unread    bool         // see Unread

	// ReadDeadline and WriteDeadline record the deadlines the user last
	// set (UnixNano), so a user can skip re-arming a deadline that is
	// still far enough away; they survive Put because deadlines are not
	// cleared on return to the pool.
	ReadDeadline, WriteDeadline int64
}

// Backend returns the backend this connection leads to.
func (c *Conn) Backend() *Backend { return c.b }

// PlainConn implements sockio.PlainConn: the accounting adds nothing to
// the bytes, so an HTTP/2 backend connection may use the socket's raw
// reads and writes when it is plain TCP (TLS is not: sockio.NewRaw
// refuses it).
func (c *Conn) PlainConn() net.Conn { return c.Conn }

// Reused reports whether the conn came from the pool. A request that fails
// on a reused conn before any response byte may be retried if idempotent:
// the backend may have closed it while idle.
func (c *Conn) Reused() bool { return c.reuses > 0 }

// Reuses returns how many times the pool handed this conn out again.
func (c *Conn) Reuses() int { return c.reuses }

// Requests returns the number of Done calls made with this conn.
func (c *Conn) Requests() int { return c.requests }

// Close closes the connection and, if it was checked out, releases its slot
// in the backend's Active count. Safe to call more than once.
func (c *Conn) Close() error {
	c.release()
	return c.Conn.Close()
}

// release ends the checkout exactly once, even if Close races with Put.
func (c *Conn) release() bool {
	if c.out.CompareAndSwap(true, false) {
		c.b.active.Add(-1)
		c.b.loadChanged()
		return true
	}
	return false
}

// DialError reports a failed connect: nothing was sent, so the request may
// be retried on another backend whatever its method.
type DialError struct {
	Backend *Backend
	Err     error
}

// Error implements error.
func (e *DialError) Error() string {
	return fmt.Sprintf("backend %s: %v", e.Backend.address, e.Err)
}

// Unwrap exposes the net error (timeouts, refusals) to errors.Is/As.
func (e *DialError) Unwrap() error { return e.Err }

// Dial opens a new connection within ConnTO and the caller's deadline (zero =
// none). The connect counts in Pending while in progress and the result in
// Active. A failure marks the backend dead (Pound's kill_be) unless
// NoPassiveDown or the caller's own, shorter deadline ran out: a request
// out of time says nothing about the backend. The Prober resurrects it.
func (b *Backend) Dial(deadline time.Time) (*Conn, error) {
	start := time.Now()
	limit := start.Add(b.connTO)
	callerCut := !deadline.IsZero() && deadline.Before(limit)
	if callerCut {
		limit = deadline
	}
	ctx, cancel := context.WithDeadline(context.Background(), limit)
	b.pending.Add(1)
	b.loadChanged()
	nc, err := b.dial(ctx, b.Network(), b.address)
	expired := ctx.Err() != nil
	cancel()
	if err != nil {
		b.pending.Add(-1)
		b.loadChanged()
		if !b.noPassiveDown && !(callerCut && expired) {
			b.SetAlive(false, err.Error())
		}
		return nil, &DialError{Backend: b, Err: err}
	}
	b.connected(time.Since(start))
	c := &Conn{Conn: nc, b: b}
	c.peek.init(nc)
	c.wr.init(nc)
	c.out.Store(true)
	// Count the conn as active before it stops being pending, so that a
	// concurrent ConnLimit check never sees it in neither.
	b.active.Add(1)
	b.pending.Add(-1)
	b.loadChanged()
	return c, nil
}
