package cluster

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// Clock is a hybrid logical clock. A timestamp is 48 bits of Unix
// milliseconds and a 16-bit counter: Now is the wall clock when it moved
// on, else the last timestamp plus one, and Observe moves the clock past
// every timestamp seen from a peer. So a change made after seeing another
// always carries a later timestamp, whatever the two hosts' clocks say,
// and timestamps of unrelated changes follow the wall clocks.
//
// Now is lock-free: it runs on the request path when a session is new.
type Clock struct {
	last atomic.Uint64
	wall func() time.Time
}

// maxSkew bounds how far ahead of this host's clock a peer's timestamp
// may pull the clock: one from a host whose clock is off by more (or a
// forged one) is still ordered by, but does not drag every later local
// change into the future.
const maxSkew = time.Minute

// NewClock returns a clock reading wall (time.Now when nil).
func NewClock(wall func() time.Time) *Clock {
	if wall == nil {
		wall = time.Now
	}
	return &Clock{wall: wall}
}

func tsOf(t time.Time) uint64 { return uint64(t.UnixMilli()) << 16 }

// Now returns a timestamp later than every one returned or observed.
func (c *Clock) Now() uint64 {
	wall := tsOf(c.wall())
	for {
		last := c.last.Load()
		next := max(wall, last+1)
		if c.last.CompareAndSwap(last, next) {
			return next
		}
	}
}

// Observe moves the clock past a peer's timestamp.
func (c *Clock) Observe(ts uint64) {
	if ts > tsOf(c.wall().Add(maxSkew)) {
		return
	}
	for {
		last := c.last.Load()
		if ts <= last || c.last.CompareAndSwap(last, ts) {
			return
		}
	}
}

// Stamp orders changes to one thing (a session, a piece of runtime
// state) across the cluster: the later timestamp wins, and between equal
// timestamps (two hosts in the same millisecond) the greater Tie, which
// is the node name for runtime state and the backend id for a session,
// so that every instance and Redis pick the same winner.
type Stamp struct {
	TS  uint64
	Tie string
}

// orderKey is the stamp as bytes whose byte-wise order is the stamps'
// order: the timestamp big-endian, then Tie. Redis compares these (see
// casLua), so Go and Lua cannot disagree.
func (s Stamp) orderKey() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(s.Tie)), s.TS)
	return append(b, s.Tie...)
}

// After reports whether s wins over t.
func (s Stamp) After(t Stamp) bool {
	return bytes.Compare(s.orderKey(), t.orderKey()) > 0
}
