package session

import (
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const benchSessions = 1_000_000

// benchKeys are 32-hex-digit keys, the size of a typical PHPSESSID or
// JSESSIONID value.
func benchKeys(n, offset int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%032x", uint64(i+offset)*0x9e3779b97f4a7c15)
	}
	return keys
}

type benchFixture struct {
	tb   *Table[*fakeBackend]
	keys [][]byte
	b    []*fakeBackend
}

// fixture is one table of 1,000,000 sessions shared by the read-mostly
// benchmarks (filling it takes about a second).
var fixture = sync.OnceValue(func() *benchFixture {
	f := &benchFixture{
		tb:   NewTable[*fakeBackend](time.Hour, 2*benchSessions, nil),
		keys: benchKeys(benchSessions, 0),
	}
	for i := range 4 {
		f.b = append(f.b, newFakeBackend(fmt.Sprint("b", i)))
	}
	for i, k := range f.keys {
		f.tb.Store(k, f.b[i%4])
	}
	runtime.GC() // settle the fill's garbage before timing starts
	return f
})

func BenchmarkLookup1M(b *testing.B) {
	f := fixture()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := f.tb.Lookup(f.keys[i%benchSessions]); !ok {
			b.Fatal("miss")
		}
		i += 7919 // a prime stride: no cache-friendly sequential walk
	}
}

// BenchmarkLookupHot1M looks up 1024 sessions of the 1,000,000 over and
// over: the table's own cost without the cache misses of a cold key.
func BenchmarkLookupHot1M(b *testing.B) {
	f := fixture()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := f.tb.Lookup(f.keys[i%1024]); !ok {
			b.Fatal("miss")
		}
		i++
	}
}

func BenchmarkLookupParallel1M(b *testing.B) {
	f := fixture()
	b.ReportAllocs()
	var seed atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(1)) * 104729
		for pb.Next() {
			if _, ok := f.tb.Lookup(f.keys[i%benchSessions]); !ok {
				panic("miss")
			}
			i += 7919
		}
	})
}

func BenchmarkLookupMiss1M(b *testing.B) {
	f := fixture()
	missing := benchKeys(1024, benchSessions)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := f.tb.Lookup(missing[i%len(missing)]); ok {
			b.Fatal("hit")
		}
		i++
	}
}

// BenchmarkStoreRepoint1M re-points existing sessions: the re-pin after a
// backend dies, and the refresh of a learned session.
func BenchmarkStoreRepoint1M(b *testing.B) {
	f := fixture()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f.tb.Store(f.keys[i%benchSessions], f.b[i%4])
		i += 7919
	}
}

// BenchmarkStoreInsert1M inserts new sessions into a full table of
// 1,000,000, each evicting the least recently used one. Keys never repeat,
// so every call is a real insert (the entry and the key copy: 2 allocs).
func BenchmarkStoreInsert1M(b *testing.B) {
	tb := NewTable[*fakeBackend](time.Hour, benchSessions, nil)
	// More keys than the cap, so that every shard is full.
	for _, k := range benchKeys(benchSessions+benchSessions/5, 0) {
		tb.Store(k, nil)
	}
	runtime.GC()
	be := newFakeBackend("b")
	key := make([]byte, 0, 32)
	b.ReportAllocs()
	i := uint64(1) << 62
	for b.Loop() {
		key = strconv.AppendUint(key[:0], i*0x9e3779b97f4a7c15, 16)
		tb.Store(key, be)
		i++
	}
	if tb.Len() > benchSessions {
		b.Fatalf("Len = %d, above the cap %d", tb.Len(), benchSessions)
	}
}

// memPerSession measures once the heap that 1,000,000 sessions take,
// keys (32 bytes each) included, per session.
var memPerSession = sync.OnceValue(func() float64 {
	keys := benchKeys(benchSessions, 0)
	be := newFakeBackend("b")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tb := NewTable[*fakeBackend](time.Hour, 2*benchSessions, nil)
	for _, k := range keys {
		tb.Store(k, be)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Both must be live at the second reading: freeing the caller's keys
	// would hide the table's own copies.
	runtime.KeepAlive(keys)
	if tb.Len() != benchSessions {
		panic("sessions evicted below the cap")
	}
	return float64(after.HeapAlloc-before.HeapAlloc) / benchSessions
})

// BenchmarkMemory1M reports memPerSession as bytes/session; its ns/op is
// meaningless (the loop is empty so that -benchtime does not refill).
func BenchmarkMemory1M(b *testing.B) {
	per := memPerSession()
	for b.Loop() {
	}
	b.ReportMetric(per, "bytes/session")
}

func BenchmarkRequestKey(b *testing.B) {
	req := newRequest("/app;p=1?a=1&b=2&sid=0123456789abcdef",
		"Host: example.org", "User-Agent: bench", "Accept: */*",
		"Authorization: Basic dXNlcjpwYXNz",
		"Cookie: _ga=GA1.2.3; theme=dark; xsid=1; sid=0123456789abcdef0123456789abcdef",
		"X-Session: 0123456789abcdef")
	ip := netip.MustParseAddr("192.0.2.1")
	scratch := make([]byte, 0, MinScratch)
	for _, tt := range []struct {
		name string
		typ  Type
		id   string
	}{
		{"ip", IP, ""}, {"basic", Basic, ""}, {"url", URL, "sid"},
		{"parm", Parm, ""}, {"cookie", Cookie, "sid"}, {"header", Header, "X-Session"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			e := &Extractor{Type: tt.typ, ID: []byte(tt.id)}
			b.ReportAllocs()
			for b.Loop() {
				if e.RequestKey(req, ip, scratch) == nil {
					b.Fatal("no key")
				}
			}
		})
	}
}

// BenchmarkLookupDuringSweep: lookups of live sessions while a sweep
// removes 500,000 expiring ones from a table of 64 shards, with the
// sweep holding each shard's lock for the whole shard ("batch=all", as
// before issue 36) or for sweepBatch sessions at a time, and the same
// lookups for 200 ms in the same table with no sweep running ("no
// sweep", the baseline). It reports the longest, the 99.9th and the
// 99th percentile lookup (wall time: on a busy machine the scheduler
// adds its own pauses to all of them).
func BenchmarkLookupDuringSweep(b *testing.B) {
	for _, tc := range []struct {
		name  string
		batch int
	}{{"no sweep", 0}, {"batch=all", math.MaxInt}, {"batch=" + strconv.Itoa(sweepBatch), sweepBatch}} {
		b.Run(tc.name, func(b *testing.B) {
			defer func(old int) { sweepBatch = old }(sweepBatch)
			sweepBatch = tc.batch
			live := benchKeys(1000, 1)
			var waits []time.Duration
			be := newFakeBackend("b")
			for b.Loop() {
				b.StopTimer()
				clk := newFakeClock()
				tb := NewTable[*fakeBackend](10*time.Second, 1<<20, clk.Now)
				for _, k := range benchKeys(500_000, 1_000_000) {
					tb.Store(k, be)
				}
				clk.Advance(8 * time.Second)
				for _, k := range live {
					tb.Store(k, be)
				}
				clk.Advance(5 * time.Second)
				b.StartTimer()
				done := make(chan int)
				go func() {
					if tc.batch == 0 {
						time.Sleep(200 * time.Millisecond)
						done <- 500_000
						return
					}
					done <- tb.Sweep(clk.Now())
				}()
			lookups:
				for i := 0; ; i++ {
					select {
					case n := <-done:
						if n != 500_000 {
							b.Fatalf("swept %d, want 500000", n)
						}
						break lookups
					default:
					}
					t0 := time.Now()
					if _, ok := tb.Lookup(live[i%len(live)]); !ok {
						b.Fatal("a live session missed")
					}
					waits = append(waits, time.Since(t0))
				}
			}
			slices.Sort(waits)
			if len(waits) > 0 {
				b.ReportMetric(float64(waits[len(waits)-1].Microseconds()), "max-µs")
				b.ReportMetric(float64(waits[len(waits)*999/1000].Microseconds()), "p99.9-µs")
				b.ReportMetric(float64(waits[len(waits)*99/100].Nanoseconds())/1e3, "p99-µs")
			}
		})
	}
}

// BenchmarkPage1M: one page of 1,000 sessions from a table of 1,000,000
// (what the control API's paged listing costs lbd per page), against
// copying the whole table in last-use order (Each: what a whole listing
// costs).
func BenchmarkPage1M(b *testing.B) {
	tb := NewTable[*fakeBackend](time.Hour, 2*benchSessions, nil)
	be := newFakeBackend("b")
	for _, k := range benchKeys(benchSessions, 0) {
		tb.Store(k, be)
	}
	b.Run("page of 1000", func(b *testing.B) {
		after := ""
		for b.Loop() {
			page, more := tb.Page(after, 1000)
			if len(page) != 1000 || !more {
				b.Fatalf("page of %d, more %v", len(page), more)
			}
			after = page[len(page)-1].Key
		}
	})
	b.Run("whole table", func(b *testing.B) {
		for b.Loop() {
			n := 0
			tb.Each(func(string, *fakeBackend, time.Time) bool { n++; return true })
			if n != benchSessions {
				b.Fatalf("%d sessions", n)
			}
		}
	})
}

// BenchmarkCurve is the issue 36 cost curve: a table of N sessions
// (32-byte keys), N from 1 to 1,000,000; it reports the heap per session
// (keys included, the table's fixed cost shared among the N) and the
// lookup of a live session (ns/op, prime stride over the N keys).
func BenchmarkCurve(b *testing.B) {
	for _, n := range []int{1, 100, 1_000, 10_000, 100_000, 1_000_000} {
		b.Run("sessions="+strconv.Itoa(n), func(b *testing.B) {
			keys := benchKeys(n, 0)
			be := newFakeBackend("b")
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			tb := NewTable[*fakeBackend](time.Hour, 2*n, nil)
			for _, k := range keys {
				tb.Store(k, be)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			if tb.Len() != n {
				b.Fatalf("%d sessions stored, %d kept", n, tb.Len())
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := tb.Lookup(keys[i%n]); !ok {
					b.Fatal("miss")
				}
				i += 7919
			}
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "bytes/session")
		})
	}
}
