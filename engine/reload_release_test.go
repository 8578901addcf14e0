package engine

import (
	"runtime"
	"testing"
	"weak"

	"lbd/adminapi"
	"lbd/config"
)

// TestChangesReleasePreviousGraph: after a reload or a runtime change the
// previous graph, its configuration and its services are garbage. A
// closure of the build that captured the builder kept its prev, so every
// reload kept the whole previous graph alive, and through its own
// closures every graph before it (+41 MB a reload at 10,000 services).
func TestChangesReleasePreviousGraph(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		change func(t *testing.T, e *Engine)
	}{
		{"reload of the same file", editCfg, func(t *testing.T, e *Engine) {
			must(t, e.Apply(load(t, editCfg)))
		}},
		{"reload of a zproxy file", zproxyEditCfg, func(t *testing.T, e *Engine) {
			must(t, e.Apply(load(t, zproxyEditCfg)))
		}},
		{"runtime backend add and remove", editCfg, func(t *testing.T, e *Engine) {
			must(t, e.AddBackend(ref(0, 2, -1), adminapi.BackendSpec{Address: "127.0.0.10", Port: 80, Weight: 1, Priority: 1}))
			must(t, e.RemoveBackend(ref(0, 2, 2)))
		}},
		{"runtime log level", editCfg, func(t *testing.T, e *Engine) {
			must(t, e.SetLogLevel(0, "3"))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newEngineOn(t, tc.src)
			var graphs []weak.Pointer[graph]
			var cfgs []weak.Pointer[config.Config]
			for range 3 {
				e.mu.Lock()
				graphs = append(graphs, weak.Make(e.g))
				cfgs = append(cfgs, weak.Make(e.g.cfg))
				e.mu.Unlock()
				tc.change(t, e)
			}
			runtime.GC()
			runtime.GC()
			for i := range graphs {
				if graphs[i].Value() != nil {
					t.Errorf("graph %d of %d is still reachable after the changes", i, len(graphs))
				}
				if cfgs[i].Value() != nil {
					t.Errorf("configuration %d of %d is still reachable after the changes", i, len(cfgs))
				}
			}
		})
	}
}
