package cluster

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"lbd/config"
	"lbd/service"
)

// BenchmarkReplicationLag measures the time from a new pin on one
// instance (the table's Store, which queues the change) to its
// application on another, under a paced load of new sessions: rate per
// second for the benchmark's duration (bounded: -benchtime sets the
// number of sessions). Both instances run in this process, so they share
// one clock and the lag is exact. Reported: p50, p99 and max in ms.
//
//	go test -run '^$' -bench ReplicationLag -benchtime 20000x ./cluster
func BenchmarkReplicationLag(b *testing.B) {
	for _, rate := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("%d/s", rate), func(b *testing.B) { replicationLag(b, rate) })
	}
}

func replicationLag(b *testing.B, rate int) {
	r := startRedis(b)
	a, c := join(b, r, "a", time.Hour), join(b, r, "c", time.Hour)
	var mu sync.Mutex
	lags := make([]time.Duration, 0, b.N)
	record := func(d time.Duration) {
		mu.Lock()
		lags = append(lags, d)
		mu.Unlock()
	}
	c.n.applied.Store(&record)
	bes := a.web.Backends
	keys := make([][]byte, b.N)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "lag-%d-%d", rate, i)
	}
	// Pace in ticks of 1 ms: rate/1000 sessions per tick.
	perTick := max(rate/1000, 1)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if i%perTick == 0 {
			due := start.Add(time.Duration(i/perTick) * time.Millisecond)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		a.web.Sessions.Store(keys[i], bes[i%len(bes)])
	}
	waitFor(b, 30*time.Second, "every session applied on the other instance", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lags) >= b.N
	})
	b.StopTimer()
	elapsed := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))]) / 1e6 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(lags[len(lags)-1])/1e6, "max-ms")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "sessions/s")
	if d := a.n.Status().SessionsDropped; d != 0 {
		b.Errorf("%d session changes dropped", d)
	}
}

// BenchmarkNewPin is the cost of a new session (the pin after a miss),
// local against shared. "cluster-path" is the request path alone (the
// clock and a non-blocking send to the publisher's queue, drained here
// by a goroutine that does nothing else); "cluster-redis" adds the
// background work of a Node publishing to a real redis-server, which
// runs on the same CPUs and whose allocations the benchmark counts.
//
//	go test -run '^$' -bench NewPin -benchmem ./cluster
func BenchmarkNewPin(b *testing.B) {
	for _, mode := range []string{"local", "cluster-path", "cluster-redis"} {
		b.Run(mode, func(b *testing.B) {
			web := newWebService(b, time.Hour, 0)
			switch mode {
			case "cluster-path":
				n, err := New(&config.Cluster{Node: "a", Redis: "/nonexistent", ShareAll: true}, quietLog())
				if err != nil {
					b.Fatal(err)
				}
				n.eng = &fakeEngine{services: map[[2]string]*service.Service{{"front", "web"}: web}}
				n.attach()
				done := make(chan struct{})
				go func() {
					for {
						select {
						case <-n.queue:
						case <-done:
							return
						}
					}
				}()
				b.Cleanup(func() { close(done); n.rdb.Close() })
			case "cluster-redis":
				web = join(b, startRedis(b), "a", time.Hour).web
			}
			keys := make([][]byte, b.N)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "new-%d", i)
			}
			be := web.Backends[0]
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				web.Pin(keys[i], be)
			}
		})
	}
}
