package backend

import (
	"testing"
	"time"
)

// BenchmarkPoolGetPut measures one reuse cycle: Get (including the MSG_PEEK
// stale check on TCP), Done, Put (including the deadline reset).
func BenchmarkPoolGetPut(b *testing.B) {
	ln := listen(b, "127.0.0.1:0")
	cases := []struct {
		name string
		be   *Backend
	}{
		{name: "tcp", be: New(Options{Address: ln.Addr().String()})},
		{name: "pipe", be: pipeBackend(b, Options{})},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			c, err := tc.be.Dial(time.Time{})
			if err != nil {
				b.Fatal(err)
			}
			tc.be.Put(c)
			b.ReportAllocs()
			for b.Loop() {
				c, _ := tc.be.Get()
				tc.be.Done(c, 200, time.Millisecond)
				tc.be.Put(c)
			}
			tc.be.CloseIdle()
		})
	}
}

// BenchmarkPoolParallel runs Get/Put from all Ps on one backend whose pool
// is large enough for everyone: the cost of CAS contention on the slots.
func BenchmarkPoolParallel(b *testing.B) {
	be := pipeBackend(b, Options{MaxIdle: 64})
	var cs []*Conn
	for range 64 {
		c, _ := be.Dial(time.Time{})
		cs = append(cs, c)
	}
	for _, c := range cs {
		be.Put(c)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if c, ok := be.Get(); ok {
				be.Put(c)
			}
		}
	})
	be.CloseIdle()
}

// BenchmarkAvailable is the per-candidate check every balancer makes.
func BenchmarkAvailable(b *testing.B) {
	be := New(Options{Address: "10.0.0.1:80", ConnLimit: 10})
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if be.Available() {
			n++
		}
	}
	if n == 0 {
		b.Fatal("never available")
	}
}

// BenchmarkDone is the per-request bookkeeping of a finished exchange:
// requests, status class, latency sum and moving average.
func BenchmarkDone(b *testing.B) {
	be := New(Options{Address: "127.0.0.1:1"})
	b.ReportAllocs()
	for b.Loop() {
		be.Done(nil, 200, time.Millisecond)
	}
}
