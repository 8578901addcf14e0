package tbf

import "sync"

// bucket is one key's state; buckets of a shard are kept in a slice and
// linked by index in least-recently-used order.
type bucket struct {
	key        uint64 // the key's hash: the key itself is never stored
	stamp      int64  // the time the token count is for
	expiry     int64  // from then on the bucket is as good as full
	tokens     uint64
	prev, next int32
}

const none = -1

type shard struct {
	mu    sync.Mutex
	index map[uint64]int32
	slots []bucket
	// head is the least recently used bucket, tail the most recent;
	// free chains slots given back by expiry.
	head, tail, free int32
	_                [64]byte // keeps neighbouring shards' locks a cache line apart
}

func (s *shard) init() {
	s.index = map[uint64]int32{}
	s.head, s.tail, s.free = none, none, none
}

// take does one request's work on key h under the shard lock; when the
// bucket is empty, next is when its next token comes.
func (s *shard) take(l *Limiter, h uint64, now int64) (ok bool, next int64) {
	i, ok := s.index[h]
	if ok {
		s.unlink(i)
	} else {
		i = s.alloc(h)
	}
	b := &s.slots[i]
	l.refill(b, now)
	s.pushTail(i)
	s.expire(now)
	if b.tokens == 0 {
		return false, satAdd(b.stamp, l.interval)
	}
	b.tokens--
	return true, 0
}

// alloc finds a slot for a new key: a free one, a new one while the
// shard is below its cap, or the least recently used bucket's.
func (s *shard) alloc(h uint64) int32 {
	var i int32
	switch {
	case s.free != none:
		i = s.free
		s.free = s.slots[i].next
	case len(s.slots) < shardCap:
		s.slots = append(s.slots, bucket{})
		i = int32(len(s.slots) - 1)
	default:
		i = s.head
		s.unlink(i)
		delete(s.index, s.slots[i].key)
	}
	// An expiry in the past makes refill start the bucket full.
	s.slots[i] = bucket{key: h, expiry: -1 << 62, prev: none, next: none}
	s.index[h] = i
	return i
}

// expire forgets up to two buckets at the old end that would be full by
// now, so a shard shrinks back as its keys go quiet; being bounded, the
// work stays constant per request.
func (s *shard) expire(now int64) {
	for n := 0; n < 2 && s.head != none && s.slots[s.head].expiry <= now; n++ {
		i := s.head
		s.unlink(i)
		delete(s.index, s.slots[i].key)
		s.slots[i].next = s.free
		s.free = i
	}
}

func (s *shard) unlink(i int32) {
	b := &s.slots[i]
	if b.prev != none {
		s.slots[b.prev].next = b.next
	} else {
		s.head = b.next
	}
	if b.next != none {
		s.slots[b.next].prev = b.prev
	} else {
		s.tail = b.prev
	}
	b.prev, b.next = none, none
}

func (s *shard) pushTail(i int32) {
	b := &s.slots[i]
	b.prev, b.next = s.tail, none
	if s.tail != none {
		s.slots[s.tail].next = i
	} else {
		s.head = i
	}
	s.tail = i
}
