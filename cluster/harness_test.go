package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/backend"
	"lbd/config"
	"lbd/service"
	"lbd/session"
)

// redisServer is a redis-server the test started on a UNIX socket in
// its temporary directory, without persistence (a restart loses
// everything, the worst case for reconciliation).
type redisServer struct {
	t    testing.TB
	sock string
	cmd  *exec.Cmd
}

// startRedis starts redis-server; the test fails (it is not skipped)
// when there is none: .ci/run installs it.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): install the Debian package redis-server", err)
	}
	r := &redisServer{t: t, sock: filepath.Join(t.TempDir(), "redis.sock")}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", "0", "--unixsocket", r.sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", filepath.Dir(r.sock))
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, io.Discard
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("unix", r.sock)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server did not open %s: %v", r.sock, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop kills the server (the way a crash would) and waits for it.
func (r *redisServer) stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait() // the exit status of a killed process is no news
	r.cmd = nil
}

// fakeEngine is a cluster.Engine holding the shared services; changes
// applied to it are listed, and objects it lacks are ErrNotFound.
type fakeEngine struct {
	mu       sync.Mutex
	services map[[2]string]*service.Service
	applied  []adminapi.Change
	// known lists the listeners this engine has (others: ErrNotFound).
	known map[string]bool
}

func (f *fakeEngine) ApplyChange(c adminapi.Change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.known[c.Listener] {
		return fmt.Errorf("listener %q: %w", c.Listener, adminapi.ErrNotFound)
	}
	f.applied = append(f.applied, c)
	return nil
}

func (f *fakeEngine) SessionServices() map[[2]string]*service.Service {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[[2]string]*service.Service, len(f.services))
	for k, v := range f.services {
		out[k] = v
	}
	return out
}

// appliedChanges returns a copy of the changes applied so far.
func (f *fakeEngine) appliedChanges() []adminapi.Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]adminapi.Change(nil), f.applied...)
}

// testBackends are the addresses every instance's "web" service has.
var testBackends = []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"}

// newWebService builds a service "web" with its own backend objects (as
// another instance would) and a session table of the given TTL.
func newWebService(t testing.TB, ttl time.Duration, max int) *service.Service {
	t.Helper()
	var bes []*backend.Backend
	for _, a := range testBackends {
		bes = append(bes, backend.New(backend.Options{Network: "tcp", Address: a}))
	}
	tb := session.NewTable[*backend.Backend](ttl, max, nil)
	svc, err := service.New(&config.Service{Name: "web"}, service.Options{Backends: bes, Sessions: tb})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// member is one Node with its engine.
type member struct {
	n   *Node
	eng *fakeEngine
	web *service.Service
}

func quietLog() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// join starts a node named name on r, sharing "web" of listener "front".
func join(t testing.TB, r *redisServer, name string, ttl time.Duration) *member {
	t.Helper()
	web := newWebService(t, ttl, 0)
	eng := &fakeEngine{services: map[[2]string]*service.Service{{"front", "web"}: web},
		known: map[string]bool{"front": true}}
	n, err := New(&config.Cluster{Node: name, Redis: r.sock, KeyPrefix: "t", ShareSessions: []string{"web"}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	n.Start(eng)
	t.Cleanup(n.Close)
	return &member{n: n, eng: eng, web: web}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pinnedTo is the address key is pinned to on m ("" when none).
func (m *member) pinnedTo(key string) string {
	b, _, ok := m.web.Sessions.Get(key)
	if !ok {
		return ""
	}
	return b.Address()
}

// backend returns m's backend object for an address.
func (m *member) backend(addr string) *backend.Backend {
	for _, b := range m.web.Backends {
		if b.Address() == addr {
			return b
		}
	}
	panic("no backend " + addr)
}

// redisKeys lists the keys of n's Redis matching pattern, for checks of
// what Redis holds.
func redisKeys(t testing.TB, n *Node, pattern string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	keys, err := n.rdb.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
