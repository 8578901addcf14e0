package proxy

import (
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/backend"
	"lbd/balancer"
	"lbd/cluster"
	"lbd/config"
	"lbd/http1"
	"lbd/service"
	"lbd/session"
)

// The request cost of sessions shared by a cluster against local ones:
// the same cycle as BenchmarkRequestCycle with a COOKIE session (the
// request carries sid=abc123, already pinned: a hit), its table either
// local or observed by a cluster Node connected to a real redis-server.
// A hit never reaches the Node, so both must cost the same and allocate
// nothing.

// sessionEngine is the cluster.Engine of one service.
type sessionEngine struct{ svc *service.Service }

func (e sessionEngine) ApplyChange(adminapi.Change) error { return nil }
func (e sessionEngine) SessionServices() map[[2]string]*service.Service {
	return map[[2]string]*service.Service{{"front", "web"}: e.svc}
}

// startRedisForBench starts redis-server on a socket in a temporary
// directory; without redis-server the test fails (.ci/run installs it).
func startRedisForBench(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): install the Debian package redis-server", err)
	}
	sock := filepath.Join(t.TempDir(), "redis.sock")
	cmd := exec.Command("redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no",
		"--dir", filepath.Dir(sock))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait() // killed on purpose
	})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not start")
		}
	}
}

// newSessionProxy is newMemProxy with a COOKIE sid session, shared
// through a cluster when shared is set.
func newSessionProxy(t testing.TB, be *memConn, shared bool) (*conn, *Listener, *memConn, *service.Service) {
	b := backend.New(backend.Options{
		Network: "tcp", Address: "127.0.0.1:1", Priority: 5,
		TimeOut: time.Second, ConnTO: time.Second,
		DialContext: func(context.Context, string, string) (net.Conn, error) { return be, nil },
	})
	algo := balancer.New(balancer.Random, []*backend.Backend{b})
	t.Cleanup(algo.Close)
	tb := session.NewTable[*backend.Backend](time.Hour, 0, nil)
	svc, err := service.New(&config.Service{Name: "web"}, service.Options{Backends: []*backend.Backend{b}, Algo: algo,
		Sessions: tb, Extractor: session.Extractor{Type: session.Cookie, ID: []byte("sid")}})
	if err != nil {
		t.Fatal(err)
	}
	if shared {
		log := logrus.New()
		log.SetOutput(io.Discard)
		n, err := cluster.New(&config.Cluster{Node: "bench", Redis: startRedisForBench(t), KeyPrefix: "bench",
			ShareAll: true}, log)
		if err != nil {
			t.Fatal(err)
		}
		n.Start(sessionEngine{svc})
		t.Cleanup(n.Close)
		if !n.Status().Connected {
			t.Fatal("the cluster node is not connected to redis-server")
		}
	}
	st := &Listener{
		Dialect: config.DialectPound, Limits: http1.DefaultLimits,
		Client: time.Second, Errors: NewErrorPages(config.DialectPound, nil),
		Scheme: "http", Port: "80", Forwarded: true, MaxTries: 3,
		Edits: NewEdits(EditsConfig{LocationInPlace: true}),
	}
	st.Router.Services = []*service.Service{svc}
	st.SvcEdits = map[*service.Service]*HeaderEdits{svc: NewEdits(EditsConfig{LocationInPlace: true})}
	client := &memConn{in: []byte(benchRequest)}
	return newConn(NewServer(st), client), st, client, svc
}

func TestRequestCycleClusterSessionHitDoesNotAllocate(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "local", true: "cluster"}[shared]
		t.Run(name, func(t *testing.T) {
			c, st, client, svc := newSessionProxy(t, &memConn{reply: []byte(benchResponse)}, shared)
			if !cycle(c, st, client) {
				t.Fatal("first cycle failed")
			}
			if _, ok := svc.Sessions.Lookup([]byte("abc123")); !ok {
				t.Fatal("the first request did not pin its session")
			}
			if allocs := testing.AllocsPerRun(1000, func() {
				if !cycle(c, st, client) {
					t.Fatal("cycle failed")
				}
			}); allocs != 0 {
				t.Fatalf("%s session hit: %.1f allocations per request, want 0", name, allocs)
			}
		})
	}
}

// go test -run '^$' -bench RequestCycleSessions -benchmem -count 3 ./proxy
func BenchmarkRequestCycleSessions(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(map[bool]string{false: "local", true: "cluster"}[shared], func(b *testing.B) {
			c, st, client, _ := newSessionProxy(b, &memConn{reply: []byte(benchResponse)}, shared)
			b.ReportAllocs()
			for b.Loop() {
				if !cycle(c, st, client) {
					b.Fatal("cycle failed")
				}
			}
		})
	}
}
