package engine

import (
	"fmt"
	"strings"
	"testing"

	"lbd/adminapi"
	"lbd/config"
)

// manyServices is a Pound file of n URL services of two backends each.
func manyServices(n int) string {
	var b strings.Builder
	b.WriteString("ListenHTTP\n\tAddress 127.0.0.1\n\tPort 0\n")
	for i := range n {
		fmt.Fprintf(&b, "\tService \"s%d\"\n\t\tURL \"^/app%d/\"\n", i, i)
		for j := range 2 {
			fmt.Fprintf(&b, "\t\tBackEnd\n\t\t\tAddress 127.0.0.%d\n\t\t\tPort %d\n\t\tEnd\n", j+1, 8000+i)
		}
		b.WriteString("\tEnd\n")
	}
	b.WriteString("End\n")
	return b.String()
}

func manyServicesEngine(tb testing.TB, n int) *Engine {
	tb.Helper()
	cfg, _, err := config.LoadBytes("many.cfg", []byte(manyServices(n)), config.LoadOptions{NoDNS: true})
	if err != nil {
		tb.Fatal(err)
	}
	e, err := New(cfg, Options{Log: quietLog()})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// TestStreamSummaryAllocations: the dashboard's sampler streams every
// service each second; its allocations must not grow with the number
// of services (it made one Service value, a backend index and a map
// per service: ~5 MB of garbage a second at 10,000 services).
func TestStreamSummaryAllocations(t *testing.T) {
	for _, n := range []int{10, 300} {
		e := manyServicesEngine(t, n)
		allocs := testing.AllocsPerRun(20, func() {
			e.StreamSummary(func(int, *adminapi.Listener) {}, func(int, int, *adminapi.Service) {})
		})
		if allocs > 4 {
			t.Errorf("%d services: %v allocations a stream, want at most 4 whatever the number of services", n, allocs)
		}
	}
}

func BenchmarkStreamSummary(b *testing.B) {
	e := manyServicesEngine(b, 2000)
	b.ReportAllocs()
	for b.Loop() {
		e.StreamSummary(func(int, *adminapi.Listener) {}, func(int, int, *adminapi.Service) {})
	}
}
