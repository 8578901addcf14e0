package backend

import (
	"sync/atomic"
	"time"
)

// pool is a bounded LIFO of idle keep-alive connections. Slots live in a
// fixed array; two lock-free stacks of slot indices (tagged Treiber
// stacks: index and a change counter in one uint64, so a CAS fails after
// any intervening push or pop and ABA cannot happen) say which slots hold
// a connection and which are free. Get and Put are O(1), never block and
// allocate nothing; the most recently parked (warmest) connection is
// reused first. The array is allocated on the first Put, so a config with
// thousands of backends pays only for those that carry traffic.
type pool struct {
	max  int
	idle int64 // idle timeout in ns
	arr  atomic.Pointer[slotArray]
}

type slotArray struct {
	slots      []poolSlot
	used, free atomic.Uint64 // stack heads: tag<<32 | index+1 (0 = empty)
}

type poolSlot struct {
	conn atomic.Pointer[Conn]
	next atomic.Uint32 // index+1 of the next slot on the same stack
}

func (p *pool) init(maxIdle int, idle time.Duration) {
	if maxIdle == 0 {
		maxIdle = DefaultMaxIdle
	}
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	p.max = max(maxIdle, 0)
	p.idle = int64(idle)
}

// slotsFor returns the slot array, creating it on first use.
func (p *pool) slotsFor() *slotArray {
	if a := p.arr.Load(); a != nil || p.max == 0 {
		return a
	}
	a := &slotArray{slots: make([]poolSlot, p.max)}
	for i := len(a.slots) - 1; i >= 0; i-- {
		a.push(&a.free, uint32(i))
	}
	if !p.arr.CompareAndSwap(nil, a) {
		return p.arr.Load()
	}
	return a
}

func (a *slotArray) push(head *atomic.Uint64, i uint32) {
	for {
		old := head.Load()
		a.slots[i].next.Store(uint32(old))
		if head.CompareAndSwap(old, (old>>32+1)<<32|uint64(i+1)) {
			return
		}
	}
}

func (a *slotArray) pop(head *atomic.Uint64) (uint32, bool) {
	for {
		old := head.Load()
		top := uint32(old)
		if top == 0 {
			return 0, false
		}
		next := a.slots[top-1].next.Load()
		if head.CompareAndSwap(old, (old>>32+1)<<32|uint64(next)) {
			return top - 1, true
		}
	}
}

// peekAfter is how long a conn must have been idle before Get asks the
// kernel whether the backend closed it: a conn parked a moment ago is
// almost never stale, and the check costs a system call per request.
// Requests that still meet a stale conn are retried by the proxy when
// that is safe.
const peekAfter = 200 * time.Millisecond

// Get returns an idle pooled connection, checked out and counted in Active,
// or ok=false when there is none. Conns idle past IdleTimeout, or that the
// backend closed while idle, are closed and skipped.
func (b *Backend) Get() (c *Conn, ok bool) {
	a := b.pool.arr.Load()
	if a == nil {
		return nil, false
	}
	var now int64
	for {
		i, ok := a.pop(&a.used)
		if !ok {
			return nil, false
		}
		c := a.slots[i].conn.Swap(nil)
		a.push(&a.free, i)
		if c == nil {
			continue // closed by CloseIdle or ReapIdle while listed
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
		b.loadChanged()
		return c, true
	}
}

// Put returns a connection after a complete exchange that left it reusable.
// It is closed instead when the pool is full or disabled, or the backend is
// disabled, dead or retired. Put on a conn that is not checked out (already
// Put or Closed) does nothing.
func (b *Backend) Put(c *Conn) {
	if c == nil || c.b != b || !c.release() {
		return
	}
	a := b.pool.slotsFor()
	if a == nil || !b.enabled.Load() || !b.alive.Load() || b.retired.Load() {
		c.Conn.Close()
		return
	}
	i, ok := a.pop(&a.free)
	if !ok {
		// Full, unless slots emptied by ReapIdle are still listed as
		// used: reuse one of those.
		if i, ok = a.pop(&a.used); !ok || a.slots[i].conn.Load() != nil {
			if ok {
				a.push(&a.used, i)
			}
			c.Conn.Close()
			return
		}
	}
	c.idleSince.Store(monoNow())
	a.slots[i].conn.Store(c)
	a.push(&a.used, i)
	// A flip to dead/disabled may have drained the pool between the check
	// above and the push; take the conn back out if so.
	if (!b.enabled.Load() || !b.alive.Load() || b.retired.Load()) && a.slots[i].conn.CompareAndSwap(c, nil) {
		c.Conn.Close()
	}
}

// Idle returns the number of connections parked in the pool.
func (b *Backend) Idle() int {
	a := b.pool.arr.Load()
	if a == nil {
		return 0
	}
	n := 0
	for i := range a.slots {
		if a.slots[i].conn.Load() != nil {
			n++
		}
	}
	return n
}

// CloseIdle closes every idle pooled connection (backend disabled, dead or
// removed from the configuration).
func (b *Backend) CloseIdle() {
	a := b.pool.arr.Load()
	if a == nil {
		return
	}
	for i := range a.slots {
		if c := a.slots[i].conn.Swap(nil); c != nil {
			c.Conn.Close()
		}
	}
	a.compact()
}

// compact moves the slots that CloseIdle or ReapIdle emptied from the
// used list back to the free list. Put only looks at the top of the used
// list when the free list is empty (a full pool must stay cheap), so
// empty slots left deeper would shrink the pool until Get walked past
// them. Slots still holding a conn go back in their order.
func (a *slotArray) compact() {
	var keep []uint32
	for {
		i, ok := a.pop(&a.used)
		if !ok {
			break
		}
		if a.slots[i].conn.Load() == nil {
			a.push(&a.free, i)
		} else {
			keep = append(keep, i)
		}
	}
	for j := len(keep) - 1; j >= 0; j-- {
		a.push(&a.used, keep[j])
	}
}

// ReapIdle closes pooled connections idle longer than IdleTimeout and returns
// how many it closed. The Prober calls it every interval so that cold conns
// at the bottom of the stack do not hold sockets forever.
func (b *Backend) ReapIdle() int {
	a := b.pool.arr.Load()
	if a == nil {
		return 0
	}
	now := monoNow()
	n := 0
	for i := range a.slots {
		c := a.slots[i].conn.Load()
		if c != nil && now-c.idleSince.Load() > b.pool.idle && a.slots[i].conn.CompareAndSwap(c, nil) {
			c.Conn.Close()
			n++
		}
	}
	if n > 0 {
		a.compact()
	}
	return n
}
