package tbf

import (
	"hash/maphash"
	"time"
)

// Peek reports how many tokens key's bucket holds now, without taking
// one, creating the bucket or moving it in the least-recently-used order
// (the routing explainer's dry run). A key without a bucket has a full
// one.
func (l *Limiter) Peek(key []byte) (uint64, error) {
	return l.PeekAt(key, int64(time.Since(epoch)))
}

// PeekAt is Peek at time now (ns on the Limiter's clock).
func (l *Limiter) PeekAt(key []byte, now int64) (uint64, error) {
	if l.burst == 0 {
		return 0, ErrNoBurst
	}
	h := maphash.Bytes(l.seed, key)
	s := &l.shards[h%shardCount]
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[h]
	if !ok {
		return l.burst, nil
	}
	b := s.slots[i] // a copy: refill works on it, the bucket stays as it is
	l.refill(&b, now)
	return b.tokens, nil
}
