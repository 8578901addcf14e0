package engine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"lbd/config"
)

// sizeConfig is bench/scale.sh size's configuration at n services: URL
// services of two backends each on one HTTP listener.
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

// perServiceBudget is what a started engine may keep per URL service of
// two backends, configuration model included: 5,665 bytes at 1,000
// services before issue 36's work on the objects' sizes (55 MB at
// 10,000), 3,460 after, 2,809 after the second round (file text, Locus,
// shared address strings, hooks, balancer groups, runtime backends).
const perServiceBudget = 3000

// TestHeapPerService: the live heap of a started engine of 1,000 plain
// services, after a collection, within perServiceBudget each.
func TestHeapPerService(t *testing.T) {
	const n = 1000
	src := sizeConfig(n)
	base := liveHeap()
	e, _ := newEngineOn(t, src)
	src = ""
	used := liveHeap() - base
	t.Logf("%d services: %d bytes live, %d a service", n, used, used/n)
	if used > n*perServiceBudget {
		t.Errorf("%d bytes a service, budget %d", used/n, perServiceBudget)
	}
	runtime.KeepAlive(e)
}

// TestPoundServicesShareListenerEdits: a Pound service without its own
// RewriteLocation takes the listener's edits (no entry of its own); a
// zproxy service keeps its own, compiled from its header directives.
func TestPoundServicesShareListenerEdits(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want int
	}{
		{"Pound services", sizeConfig(3), 0},
		{"a zproxy service", zproxyEditCfg, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newEngineOn(t, tc.src)
			e.mu.Lock()
			defer e.mu.Unlock()
			st := e.g.listeners[0]
			if got := len(st.SvcEdits); got != tc.want {
				t.Errorf("%d services with edits of their own, want %d", got, tc.want)
			}
			if st.Edits == nil {
				t.Error("the listener has no edits")
			}
		})
	}
}

// TestBackendLogSize: each of 20,000 backends keeps its logger boxed in
// an interface: 32 bytes, the service's logger and timeline shared (80
// before issue 36, 48 with the file name and line as a string and an
// int).
func TestBackendLogSize(t *testing.T) {
	if n := unsafe.Sizeof(backendLog{}); n > 32 {
		t.Errorf("backendLog is %d bytes, budget 32", n)
	}
}

// TestConfigTextNotKept: once an engine is built and started from a
// configuration file's bytes, nothing it keeps points into them (every
// name, address and pattern of the model is a string of its own,
// parser/lexer.go's texts): the file's text (2.1 MB at 10,000 services)
// is freed with the bytes, which would otherwise stay as long as the
// configuration runs.
func TestConfigTextNotKept(t *testing.T) {
	src := []byte(sizeConfig(50))
	freed := make(chan struct{})
	runtime.AddCleanup(&src[0], func(ch chan struct{}) { close(ch) }, freed)
	cfg, _, err := config.LoadBytes("test.cfg", src, config.LoadOptions{NoDNS: true})
	src = nil
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg, Options{Log: quiet(), Cluster: &feed{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for range 20 {
		runtime.GC()
		select {
		case <-freed:
			runtime.KeepAlive(e)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Error("the configuration file's bytes are still reachable from the engine")
	runtime.KeepAlive(e)
}
