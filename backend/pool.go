package backend

import (
	"sync/atomic"
	"time"
)

// pool is a bounded set of idle keep-alive connections: a fixed array of
// atomic slots claimed with CAS. No mutex and no channel, so Get and Put
// never block and allocate nothing. Put fills the lowest free slot and Get
// scans from the top, which makes the pool behave like a stack: the most
// recently used (warmest, least likely to have been closed by the backend)
// conn is reused first and the cold ones age out at the bottom.
type pool struct {
	slots []atomic.Pointer[Conn]
	idle  int64 // idle timeout in ns
}

func (p *pool) init(maxIdle int, idle time.Duration) {
	if maxIdle == 0 {
		maxIdle = DefaultMaxIdle
	}
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	p.slots = make([]atomic.Pointer[Conn], max(maxIdle, 0))
	p.idle = int64(idle)
}

// Get returns an idle pooled connection, checked out and counted in Active,
// or ok=false when there is none. Conns idle past IdleTimeout, or that the
// backend closed while idle, are closed and skipped.
// peekAfter is how long a conn must have been idle before Get asks the
// kernel whether the backend closed it: a conn parked a moment ago is
// almost never stale, and the check costs a system call per request.
// Requests that still meet a stale conn are retried by the proxy when
// that is safe.
const peekAfter = 200 * time.Millisecond

func (b *Backend) Get() (c *Conn, ok bool) {
	slots := b.pool.slots
	var now int64
	for i := len(slots) - 1; i >= 0; i-- {
		c := slots[i].Load()
		if c == nil || !slots[i].CompareAndSwap(c, nil) {
			continue
		}
		if now == 0 {
			now = monoNow()
		}
		idle := now - c.idleSince.Load()
		if idle > b.pool.idle || (idle > int64(peekAfter) && !c.peek.idleOK()) {
			c.Conn.Close()
			continue
		}
		c.reuses++
		c.out.Store(true)
		b.active.Add(1)
		return c, true
	}
	return nil, false
}

// Put returns a connection after a complete exchange that left it reusable.
// It is closed instead when the pool is full or disabled, or the backend is
// disabled or dead. Deadlines are cleared so the next user starts clean.
// Put on a conn that is not checked out (already Put or Closed) does nothing.
func (b *Backend) Put(c *Conn) {
	if c == nil || c.b != b || !c.release() {
		return
	}
	if !b.enabled.Load() || !b.alive.Load() || b.retired.Load() || len(b.pool.slots) == 0 {
		c.Conn.Close()
		return
	}
	c.idleSince.Store(monoNow())
	slots := b.pool.slots
	for i := range slots {
		if slots[i].Load() == nil && slots[i].CompareAndSwap(nil, c) {
			// A flip to dead/disabled may have drained the pool between
			// our check and the CAS; take the conn back out if so.
			if (!b.enabled.Load() || !b.alive.Load() || b.retired.Load()) && slots[i].CompareAndSwap(c, nil) {
				c.Conn.Close()
			}
			return
		}
	}
	c.Conn.Close()
}

// Idle returns the number of connections parked in the pool.
func (b *Backend) Idle() int {
	n := 0
	for i := range b.pool.slots {
		if b.pool.slots[i].Load() != nil {
			n++
		}
	}
	return n
}

// CloseIdle closes every idle pooled connection (backend disabled, dead or
// removed from the configuration).
func (b *Backend) CloseIdle() {
	for i := range b.pool.slots {
		if c := b.pool.slots[i].Swap(nil); c != nil {
			c.Conn.Close()
		}
	}
}

// ReapIdle closes pooled connections idle longer than IdleTimeout and returns
// how many it closed. The Prober calls it every interval so that cold conns
// at the bottom of the stack do not hold sockets forever.
func (b *Backend) ReapIdle() int {
	now := monoNow()
	n := 0
	for i := range b.pool.slots {
		c := b.pool.slots[i].Load()
		if c != nil && now-c.idleSince.Load() > b.pool.idle && b.pool.slots[i].CompareAndSwap(c, nil) {
			c.Conn.Close()
			n++
		}
	}
	return n
}
