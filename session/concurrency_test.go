package session

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentUse exercises every operation at once; run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	const maxEntries = 3000
	tb := NewTable[int](time.Second, maxEntries, c.Now)
	var wg sync.WaitGroup
	worker := func(id int) {
		defer wg.Done()
		key := make([]byte, 0, 16)
		for i := range 2000 {
			key = fmt.Appendf(key[:0], "k%d", (i*7+id)%5000)
			switch i % 5 {
			case 0, 1:
				if v, ok := tb.Lookup(key); ok && (v < 0 || v > 3) {
					panic(fmt.Sprintf("value %d never stored", v))
				}
			case 2:
				tb.Store(key, id%4)
			case 3:
				tb.Delete(string(key))
			case 4:
				c.Advance(time.Millisecond)
			}
		}
	}
	for id := range 8 {
		wg.Add(1)
		go worker(id)
	}
	wg.Add(3)
	go func() {
		defer wg.Done()
		for range 50 {
			tb.Sweep(c.Now())
		}
	}()
	go func() {
		defer wg.Done()
		for range 20 {
			tb.Each(func(string, int, time.Time) bool { return true })
			tb.DeleteValue(3)
		}
	}()
	go func() {
		defer wg.Done()
		for range 20 {
			tb.Remap(func(v int) (int, bool) { return v, true })
			tb.Len()
		}
	}()
	wg.Wait()
	if n := tb.Len(); n > maxEntries {
		t.Fatalf("Len = %d, above the cap %d", n, maxEntries)
	}
	for i := range tb.shards {
		s := &tb.shards[i]
		n := 0
		for e := s.head; e != nil; e = e.next {
			if s.m[e.key] != e {
				t.Fatalf("listed entry %q not in the map", e.key)
			}
			n++
		}
		if n != len(s.m) {
			t.Fatalf("shard %d lists %d entries, map has %d", i, n, len(s.m))
		}
	}
}
