// Package tbf is Pound's token bucket filter (the TBF condition): each
// key has a bucket of at most Burst tokens that refills at one token per
// Interval; a request takes a token if there is one.
//
// Buckets live in a fixed number of shards, each behind its own mutex
// and chosen by a seeded hash of the key, so requests for different keys
// seldom meet on a lock. A shard holds at most a fixed number of buckets:
// an attacker who sends a new key with every request makes the least
// recently used bucket be forgotten (which is what Pound's expiry does
// anyway once a bucket would be full again) instead of growing memory.
package tbf

import (
	"errors"
	"hash/maphash"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	shardCount = 64
	// MaxBuckets bounds the buckets of one Limiter.
	MaxBuckets = 1 << 16
	shardCap   = MaxBuckets / shardCount
)

// ErrNoBurst is Pound's answer to a filter with a burst of 0: the
// condition fails with an error (the request gets a 500).
var ErrNoBurst = errors.New("tbf: the burst is 0")

// Limiter is the bucket set of one TBF statement.
type Limiter struct {
	interval uint64 // nanoseconds per token
	burst    uint64
	seed     maphash.Seed
	shards   [shardCount]shard
	// decided counts the requests that got a token ([0]) and those
	// refused ([1]) (lbd_tbf_decisions_total).
	decided [2]atomic.Uint64
}

// Decisions returns how many takes found a token and how many did not.
func (l *Limiter) Decisions() (allowed, refused uint64) {
	return l.decided[0].Load(), l.decided[1].Load()
}

// New makes a filter that adds a token every interval ns, up to burst.
func New(interval uint64, burst uint32) *Limiter {
	l := &Limiter{interval: max(interval, 1), burst: uint64(burst), seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].init()
	}
	return l
}

// epoch makes times small monotonic nanosecond counts (time.Since reads
// the monotonic clock, unlike Pound's CLOCK_REALTIME, so a clock step
// neither refills nor drains buckets).
var epoch = time.Now()

// Allow takes a token from key's bucket and reports whether there was
// one.
func (l *Limiter) Allow(key []byte) (bool, error) {
	return l.AllowAt(key, int64(time.Since(epoch)))
}

// AllowAt is Allow at time now (ns on the Limiter's clock; tests drive it).
func (l *Limiter) AllowAt(key []byte, now int64) (bool, error) {
	ok, _, err := l.TakeAt(key, now)
	return ok, err
}

// Take is Allow that also says, when the bucket is empty, how long until
// it has a token again (for a Retry-After header).
func (l *Limiter) Take(key []byte) (ok bool, wait time.Duration, err error) {
	return l.TakeAt(key, int64(time.Since(epoch)))
}

// TakeAt is Take at time now.
func (l *Limiter) TakeAt(key []byte, now int64) (ok bool, wait time.Duration, err error) {
	if l.burst == 0 {
		return false, 0, ErrNoBurst
	}
	h := maphash.Bytes(l.seed, key)
	s := &l.shards[h%shardCount]
	s.mu.Lock()
	ok, next := s.take(l, h, now)
	s.mu.Unlock()
	if ok {
		l.decided[0].Add(1)
		return true, 0, nil
	}
	l.decided[1].Add(1)
	return false, time.Duration(next - now), nil
}

// Interval is the time per token in nanoseconds; Burst the bucket size.
func (l *Limiter) Interval() uint64 { return l.interval }

// Burst is the most tokens a bucket holds.
func (l *Limiter) Burst() uint64 { return l.burst }

// InUse is the number of buckets that are not full: keys seen lately
// enough that forgetting them would give them tokens back. Buckets past
// that point are only waiting to be reused.
func (l *Limiter) InUse() int {
	return l.inUseAt(int64(time.Since(epoch)))
}

func (l *Limiter) inUseAt(now int64) int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for _, j := range s.index {
			if s.slots[j].expiry > now {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// Len is the number of buckets held.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.index)
		s.mu.Unlock()
	}
	return n
}

// refill brings b up to now as Pound's tbf_check does: a bucket past its
// expiry starts full; otherwise it gains one token per whole interval
// since its time stamp, which advances by those intervals only, so no
// fraction of a token is lost.
func (l *Limiter) refill(b *bucket, now int64) {
	if now > b.expiry {
		b.stamp, b.tokens = now, l.burst
	} else if now > b.stamp {
		add := uint64(now-b.stamp) / l.interval
		b.stamp += int64(add * l.interval)
		b.tokens = min(l.burst, b.tokens+add)
	}
	// The bucket is worth keeping until it would be full again.
	b.expiry = satAdd(now, satMul(1+l.burst-b.tokens, l.interval))
}

func satMul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return lo
}

func satAdd(a int64, b uint64) int64 {
	if b > uint64(math.MaxInt64-a) {
		return math.MaxInt64
	}
	return a + int64(b)
}
