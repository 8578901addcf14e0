package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/config"
)

func load(t *testing.T, src string) *config.Config {
	t.Helper()
	cfg, _, err := config.LoadBytes("test.cfg", []byte(src), config.LoadOptions{NoDNS: true})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const twoBackends = `ListenHTTP
	Address 127.0.0.1
	Port 18080
	Service "web"
		BackEnd
			Address 127.0.0.2
			Port 80
		End
		BackEnd
			Address 127.0.0.3
			Port 80
			Priority PRIO
		End
		Session
			Type HEADER
			ID "X-S"
			TTL 60
		End
	End
End
`

func mustBuild(t *testing.T, cfg *config.Config, prev *graph) *graph {
	t.Helper()
	g, err := build(cfg, prev, logrus.StandardLogger(), nil, buildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func cfgWith(t *testing.T, prio string, extra string) *config.Config {
	return load(t, strings.Replace(twoBackends, "PRIO", prio, 1)+extra)
}

// TestRebuildKeepsStateByIdentity checks what a reload carries over:
// unchanged backends are the same objects, a backend whose settings
// changed is replaced but keeps its enabled flag and its sessions, and
// the old object is retired.
func TestRebuildKeepsStateByIdentity(t *testing.T) {
	g1 := mustBuild(t, cfgWith(t, "5", ""), nil)
	svc1 := g1.services[0][0]
	a, b := svc1.Backends[0], svc1.Backends[1]
	b.SetEnabled(false)
	svc1.Sessions.Store([]byte("alice"), b)
	svc1.Sessions.Store([]byte("bob"), a)

	g2 := mustBuild(t, cfgWith(t, "7", ""), g1)
	retire(g1, g2)
	svc2 := g2.services[0][0]
	if svc2.Backends[0] != a {
		t.Fatal("unchanged backend was not reused")
	}
	nb := svc2.Backends[1]
	if nb == b || nb.Priority() != 7 {
		t.Fatalf("changed backend not rebuilt: same=%v priority=%d", nb == b, nb.Priority())
	}
	if nb.Enabled() {
		t.Fatal("operator's disable was lost on reload")
	}
	if !b.Retired() || a.Retired() {
		t.Fatalf("retired: old=%v unchanged=%v", b.Retired(), a.Retired())
	}
	if svc2.Sessions != svc1.Sessions {
		t.Fatal("session table not kept for an unchanged service")
	}
	if got, ok := svc2.Sessions.Lookup([]byte("alice")); !ok || got != nb {
		t.Fatalf("alice's session points at %v, want the new backend", got)
	}
	if got, ok := svc2.Sessions.Lookup([]byte("bob")); !ok || got != a {
		t.Fatal("bob's session lost")
	}
}

func TestRemovedBackendLosesItsSessions(t *testing.T) {
	g1 := mustBuild(t, cfgWith(t, "5", ""), nil)
	svc1 := g1.services[0][0]
	gone := svc1.Backends[1]
	svc1.Sessions.Store([]byte("alice"), gone)
	one := strings.Replace(twoBackends, "\t\tBackEnd\n\t\t\tAddress 127.0.0.3\n\t\t\tPort 80\n\t\t\tPriority PRIO\n\t\tEnd\n", "", 1)
	g2 := mustBuild(t, load(t, one), g1)
	if len(g2.services[0][0].Backends) != 1 {
		t.Fatal("backend not removed")
	}
	if _, ok := g2.services[0][0].Sessions.Lookup([]byte("alice")); ok {
		t.Fatal("session of a removed backend survived the reload")
	}
}

func TestListenerStateFromConfig(t *testing.T) {
	g := mustBuild(t, cfgWith(t, "5", "Service \"global\"\n\tBackEnd\n\t\tAddress 127.0.0.9\n\t\tPort 80\n\tEnd\nEnd\n"), nil)
	st := g.listeners[0]
	if len(st.Router.Services) != 2 || st.Router.Services[0].Name != "web" || st.Router.Services[1].Name != "global" {
		t.Fatalf("router order: listener services first, then global: %v", st.Router.Services)
	}
	if st.Scheme != "http" || st.Port != "18080" || st.Client.Seconds() != 10 {
		t.Fatalf("listener state: scheme %q port %q client %v", st.Scheme, st.Port, st.Client)
	}
}

func TestWorkersReportTheConfiguredPool(t *testing.T) {
	cases := []struct {
		name             string
		active, min, max int
		wantCount        int
	}{
		{"idle: the minimum", 0, 5, 128, 5},
		{"busy: one per connection", 40, 5, 128, 40},
		{"beyond the maximum: the maximum", 300, 5, 128, 128},
		{"configured minimum", 2, 16, 64, 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := workers(tc.active, &config.Config{Threads: tc.max, WorkerMin: tc.min, WorkerIdle: config.Duration(45 * time.Second)})
			if w.Count != tc.wantCount || w.Min != tc.min || w.Max != tc.max || w.IdleTimeout != 45*time.Second {
				t.Fatalf("%+v, want count %d min %d max %d idle 45s", w, tc.wantCount, tc.min, tc.max)
			}
		})
	}
}
