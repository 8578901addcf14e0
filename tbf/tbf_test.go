package tbf

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const sec = int64(1e9)

// step is one request at a time, with the answer the filter must give.
type step struct {
	key  string
	at   int64
	want bool
}

func TestAllow(t *testing.T) {
	cases := []struct {
		name     string
		interval uint64
		burst    uint32
		steps    []step
	}{
		{name: "a burst then refusal, per key", interval: uint64(sec), burst: 3, steps: []step{
			{"a", 0, true}, {"b", 0, true}, {"a", 1, true}, {"b", 1, true}, {"a", 2, true}, {"b", 2, true},
			{"a", 3, false}, {"b", 3, false},
		}},
		{name: "one token comes back per interval", interval: uint64(sec), burst: 2, steps: []step{
			{"k", 0, true}, {"k", 1, true}, {"k", 2, false},
			{"k", sec - 1, false}, {"k", sec, true}, {"k", sec + 1, false},
			{"k", 3 * sec, true}, {"k", 3 * sec, true}, {"k", 3 * sec, false},
		}},
		{name: "a quiet bucket is full again, never fuller", interval: uint64(sec), burst: 2, steps: []step{
			{"k", 0, true}, {"k", 0, true}, {"k", 0, false},
			{"k", 100 * sec, true}, {"k", 100 * sec, true}, {"k", 100 * sec, false},
		}},
		{name: "partial intervals are not lost", interval: uint64(sec), burst: 1, steps: []step{
			{"k", 0, true}, {"k", sec / 2, false}, {"k", sec, true},
			{"k", 3 * sec / 2, false}, {"k", 2 * sec, true},
		}},
		{name: "rate below one per interval unit", interval: uint64(2 * sec), burst: 1, steps: []step{
			{"k", 0, true}, {"k", sec, false}, {"k", 2 * sec, true},
		}},
		{name: "the empty key is a key", interval: uint64(sec), burst: 1, steps: []step{
			{"", 0, true}, {"", 1, false}, {"x", 1, true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := New(tc.interval, tc.burst)
			for i, s := range tc.steps {
				got, err := l.AllowAt([]byte(s.key), s.at)
				if err != nil {
					t.Fatal(err)
				}
				if got != s.want {
					t.Fatalf("step %d (%q at %d): %v, want %v", i, s.key, s.at, got, s.want)
				}
			}
		})
	}
}

func TestZeroBurstIsAnError(t *testing.T) {
	l := New(uint64(sec), 0)
	if _, err := l.AllowAt([]byte("k"), 0); !errors.Is(err, ErrNoBurst) {
		t.Fatalf("error %v, want ErrNoBurst", err)
	}
}

// TestBucketsAreBounded: a new key on every request cannot grow the
// filter past MaxBuckets, and the newest keys are the ones kept.
func TestBucketsAreBounded(t *testing.T) {
	l := New(uint64(sec), 5)
	for i := range 3 * MaxBuckets {
		if _, err := l.AllowAt([]byte(strconv.Itoa(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Len(); n > MaxBuckets {
		t.Fatalf("%d buckets, want at most %d", n, MaxBuckets)
	}
	// The last key still has its bucket (4 tokens left of 5).
	last := []byte(strconv.Itoa(3*MaxBuckets - 1))
	for i := range 4 {
		if ok, _ := l.AllowAt(last, 0); !ok {
			t.Fatalf("request %d of the newest key refused", i)
		}
	}
	if ok, _ := l.AllowAt(last, 0); ok {
		t.Fatal("the newest key's bucket was forgotten")
	}
}

// TestQuietBucketsAreForgotten: once a bucket would be full again it is
// dropped as later requests pass through its shard.
func TestQuietBucketsAreForgotten(t *testing.T) {
	l := New(uint64(sec), 2)
	for i := range 100 {
		if _, err := l.AllowAt([]byte("old"+strconv.Itoa(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Enough new keys to pass through every shard many times.
	const fresh = 20 * shardCount
	for i := range fresh {
		if _, err := l.AllowAt([]byte("new"+strconv.Itoa(i)), 10*sec); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Len(); n != fresh {
		t.Fatalf("%d buckets left, want the %d fresh ones", n, fresh)
	}
}

// TestConcurrentBurst: however requests interleave, a key gets exactly
// its burst before the first refill.
func TestConcurrentBurst(t *testing.T) {
	const burst = 1000
	l := New(uint64(3600*sec), burst)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for range 500 {
				ok, err := l.AllowAt([]byte("shared"), 1)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					n++
				}
				if _, err := l.AllowAt([]byte("own"+strconv.Itoa(g)), 1); err != nil {
					t.Error(err)
					return
				}
			}
			mu.Lock()
			granted += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if granted != burst {
		t.Fatalf("%d requests granted, want %d", granted, burst)
	}
}

func BenchmarkAllow(b *testing.B) {
	l := New(1, 1<<31)
	key := []byte("192.0.2.1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAllowParallel(b *testing.B) {
	l := New(1, 1<<31)
	var next atomic.Int32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		// One client address per goroutine.
		key := []byte("198.51.100." + strconv.Itoa(int(next.Add(1))))
		for pb.Next() {
			if _, err := l.Allow(key); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestTakeSaysWhenTheNextTokenComes: a refused request learns how long
// until its bucket has a token again, counted from the last whole
// interval, never 0.
func TestTakeSaysWhenTheNextTokenComes(t *testing.T) {
	cases := []struct {
		name     string
		interval uint64
		burst    uint32
		takes    []int64 // times of earlier successful takes
		at       int64
		wantWait time.Duration
	}{
		{name: "just emptied", interval: uint64(sec), burst: 1, takes: []int64{0}, at: 0, wantWait: time.Second},
		{name: "part of the interval gone", interval: uint64(sec), burst: 2, takes: []int64{0, 0}, at: sec / 4,
			wantWait: 750 * time.Millisecond},
		{name: "counted from the last refill", interval: uint64(sec), burst: 2, takes: []int64{0, 0, sec + sec/4},
			at: sec + sec/4, wantWait: 750 * time.Millisecond},
		{name: "a slow rate", interval: 60 * uint64(sec), burst: 1, takes: []int64{0}, at: 10 * sec,
			wantWait: 50 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := New(tc.interval, tc.burst)
			for _, at := range tc.takes {
				if ok, _, err := l.TakeAt([]byte("k"), at); !ok || err != nil {
					t.Fatalf("take at %d refused: %v", at, err)
				}
			}
			ok, wait, err := l.TakeAt([]byte("k"), tc.at)
			if ok || err != nil || wait != tc.wantWait {
				t.Errorf("TakeAt = %v, %v, %v; want refused, %v", ok, wait, err, tc.wantWait)
			}
		})
	}
}

// TestInUseCountsBucketsNotFull: a bucket counts while it is not full
// again; one that has had time to fill up does not, held or not.
func TestInUseCountsBucketsNotFull(t *testing.T) {
	l := New(uint64(sec), 2)
	for _, k := range []string{"a", "b", "c"} {
		if ok, _, _ := l.TakeAt([]byte(k), 0); !ok {
			t.Fatal("refused")
		}
	}
	if n := l.inUseAt(0); n != 3 {
		t.Errorf("in use at 0: %d, want 3", n)
	}
	l.TakeAt([]byte("c"), 5*sec) // c again, later: a and b are full by then
	if n, held := l.inUseAt(5*sec), l.Len(); n != 1 || held < 1 {
		t.Errorf("in use at 5s: %d (held %d), want 1", n, held)
	}
}

// TestPeek checks that Peek reports the tokens Allow would see and
// changes nothing: no token taken, no bucket made, no eviction order
// moved.
func TestPeek(t *testing.T) {
	l := New(uint64(sec), 2)
	if n, err := l.PeekAt([]byte("k"), 0); err != nil || n != 2 || l.Len() != 0 {
		t.Fatalf("peek of a new key = %d, %v with %d buckets; want 2 and none made", n, err, l.Len())
	}
	if ok, _ := l.AllowAt([]byte("k"), 0); !ok {
		t.Fatal("refused")
	}
	for range 3 {
		if n, _ := l.PeekAt([]byte("k"), 1); n != 1 {
			t.Fatalf("peek = %d, want 1", n)
		}
	}
	if n, _ := l.PeekAt([]byte("k"), sec+1); n != 2 {
		t.Fatalf("peek after an interval = %d, want 2", n)
	}
	for i, want := range []bool{true, false} {
		if ok, _ := l.AllowAt([]byte("k"), 2); ok != want {
			t.Fatalf("allow %d after peeks = %v, want %v", i, ok, want)
		}
	}
	if _, err := New(1, 0).Peek([]byte("k")); !errors.Is(err, ErrNoBurst) {
		t.Fatalf("burst 0: %v, want ErrNoBurst", err)
	}
}

func TestDecisionsCounted(t *testing.T) {
	tests := []struct {
		name             string
		burst            uint32
		takes            int
		allowed, refused uint64
	}{
		{name: "within the burst", burst: 3, takes: 3, allowed: 3},
		{name: "past the burst", burst: 2, takes: 5, allowed: 2, refused: 3},
		{name: "no burst is an error, not a decision", burst: 0, takes: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := New(uint64(time.Hour), tc.burst)
			for i := 0; i < tc.takes; i++ {
				// The decision is what is counted; ErrNoBurst is the
				// case that must count nothing.
				_, _, _ = l.TakeAt([]byte("k"), 1)
			}
			if a, r := l.Decisions(); a != tc.allowed || r != tc.refused {
				t.Errorf("allowed %d refused %d, want %d and %d", a, r, tc.allowed, tc.refused)
			}
		})
	}
}
