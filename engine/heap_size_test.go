package engine

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
)

// sizeConfig is bench/scale.sh size's configuration: n URL services of
// two backends each on one HTTP listener.
func sizeConfig(n int) string {
	var sb strings.Builder
	sb.WriteString("Daemon 0\nLogLevel 0\nListenHTTP\n    Address 127.0.0.1\n    Port 0\n")
	for i := range n {
		fmt.Fprintf(&sb, "    Service \"s%d\"\n        URL \"^/app%d/\"\n", i, i)
		for range 2 {
			sb.WriteString("        BackEnd\n            Address 127.0.0.1\n            Port 26001\n        End\n")
		}
		sb.WriteString("    End\n")
	}
	sb.WriteString("End\n")
	return sb.String()
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func TestHeapProfileAtSize(t *testing.T) {
	out := os.Getenv("LBD_HEAPPROF")
	if out == "" {
		t.Skip("LBD_HEAPPROF")
	}
	runtime.MemProfileRate = 4096
	src := sizeConfig(10000)
	base := liveHeap()
	e, _ := newEngineOn(t, src)
	src = ""
	h := liveHeap()
	t.Logf("live heap for the engine: %.1f MB", float64(h-base)/1e6)
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	runtime.KeepAlive(e)
}
