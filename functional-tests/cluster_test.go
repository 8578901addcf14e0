package functionaltests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The Cluster section: lbd instances on 127.0.0.11, .12, .13 (and a late
// .14) share sessions and runtime state through a redis-server the test
// starts on a UNIX socket. Every wait is a poll with a deadline.

// redisProc is a redis-server started by the test, without persistence:
// a restart comes back empty, which the instances must repair.
type redisProc struct {
	t    *testing.T
	sock string
	cmd  *exec.Cmd
}

// startRedisServer starts redis-server; the test fails, it is not
// skipped, when there is none (.ci/run installs it).
func startRedisServer(t *testing.T) *redisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (%v): install the Debian package redis-server", err)
	}
	r := &redisProc{t: t, sock: filepath.Join(t.TempDir(), "redis.sock")}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisProc) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", "0", "--unixsocket", r.sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", filepath.Dir(r.sock))
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	poll(r.t, 5*time.Second, "redis-server listens", func() bool {
		c, err := net.Dial("unix", r.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// stop kills redis-server by its PID, as a crash would.
func (r *redisProc) stop() {
	if r.cmd != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait() // killed: its exit status says so
		r.cmd = nil
	}
}

// poll waits until cond holds, failing the test after within.
func poll(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// instance is one lbd of the cluster.
type instance struct {
	*proc
	name string
	ctl  string // Pound control socket
	zctl string // zproxy control socket ("" without -C)
}

// clusterConfig is an instance's configuration: listener "front" on its
// own address, service "web" with HEADER sessions shared.
func clusterConfig(name, addr, redis, ctl string, bes []*backend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 3\nGrace 1\nControl %q\n", ctl)
	fmt.Fprintf(&b, "Cluster\n\tNode %q\n\tRedis %q\n\tKeyPrefix \"ft\"\n\tShareSessions \"web\"\nEnd\n", name, redis)
	host, port, _ := net.SplitHostPort(addr)
	fmt.Fprintf(&b, "ListenHTTP \"front\"\n\tAddress %s\n\tPort %s\n\tService \"web\"\n", host, port)
	for _, be := range bes {
		b.WriteString(be.block())
	}
	b.WriteString("\t\tSession\n\t\t\tType HEADER\n\t\t\tID \"X-Sess\"\n\t\t\tTTL 300\n\t\tEnd\n\tEnd\nEnd\n")
	return b.String()
}

// startInstance starts lbd as cluster node name on 127.0.0.host; zproxy
// adds a zproxy control socket (-C).
func startInstance(t *testing.T, name string, host int, r *redisProc, zproxy bool, bes []*backend) *instance {
	t.Helper()
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.%d:%d", host, freePort(t))
	in := &instance{name: name, ctl: filepath.Join(dir, "ctl.sock")}
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(clusterConfig(name, addr, r.sock, in.ctl, bes)), 0o644); err != nil {
		t.Fatal(err)
	}
	var args []string
	if zproxy {
		in.zctl = filepath.Join(dir, "z.sock")
		args = []string{"-C", in.zctl}
	}
	in.proc = runLBD(t, dir, path, addr, args...)
	poll(t, 5*time.Second, name+" opens its control sockets", func() bool {
		for _, s := range []string{in.ctl, in.zctl} {
			if _, _, err := unixTry(s, http.MethodGet, "/", ""); s != "" && err != nil {
				return false
			}
		}
		return true
	})
	return in
}

// via returns the backend that answers key's request through in.
func (in *instance) via(t *testing.T, c *http.Client, key string) (string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+in.addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Sess", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	return resp.Header.Get("X-Backend"), nil
}

// followsPin checks that key's requests through in go to want, once in
// has the session. (A request reaching in before the pin makes a pin of
// its own, which, being later, wins everywhere: the replication lag is
// the window for that, and the benchmarks measure it.)
func (in *instance) followsPin(t *testing.T, c *http.Client, key, want string) {
	t.Helper()
	poll(t, 5*time.Second, key+" replicated to "+in.name, func() bool {
		_, body, err := unixTry(in.ctl, http.MethodGet, "/listener/1/0", "")
		return err == nil && strings.Contains(body, `"`+key+`"`)
	})
	if got, err := in.via(t, c, key); err != nil || got != want {
		t.Fatalf("%s through %s went to %q (%v), want %q", key, in.name, got, err, want)
	}
}

// unixDo sends a request to a control socket and returns status and body.
func unixDo(t *testing.T, sock, method, path, body string) (int, string) {
	t.Helper()
	code, b, err := unixTry(sock, method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

// unixTry is unixDo that returns the error, for polls (lbd opens its
// control socket after its listeners).
func unixTry(sock, method, path, body string) (int, string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	req, err := http.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// lbctl runs lbctl -s sock args and returns stdout, failing on an error.
func (in *instance) lbctl(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := lbctlRun(t, "lbctl", nil, append([]string{"-s", in.ctl}, args...)...)
	if code != 0 {
		t.Fatalf("lbctl %v on %s: %d %s", args, in.name, code, errOut)
	}
	return out
}

// backendState is the STATE column of backend /1/0/i in in's listing.
func (in *instance) backendState(t *testing.T, i int) string {
	t.Helper()
	return in.backendColumn(t, i, 4)
}

// backendColumn is column col of backend /1/0/i in in's listing (4 is
// STATE, 5 PRIO).
func (in *instance) backendColumn(t *testing.T, i, col int) string {
	t.Helper()
	path := fmt.Sprintf("/1/0/%d", i)
	for _, line := range strings.Split(in.lbctl(t, "list", "/1/0"), "\n") {
		if f := strings.Fields(line); len(f) > col && f[0] == path {
			return f[col]
		}
	}
	t.Fatalf("%s: no %s in the listing", in.name, path)
	return ""
}

func TestCluster(t *testing.T) {
	r := startRedisServer(t)
	var bes []*backend
	for i, name := range []string{"one", "two", "three"} {
		bes = append(bes, startBackend(t, fmt.Sprintf("127.0.0.%d", i+2), name, echoHandler(name)))
	}
	a := startInstance(t, "a", 11, r, false, bes)
	b := startInstance(t, "b", 12, r, false, bes)
	c := startInstance(t, "c", 13, r, true, bes)
	all := []*instance{a, b, c}
	client := &http.Client{Timeout: 5 * time.Second}
	outageDisabled := -1 // the backend disabled while Redis is down

	t.Run("pinned on A, same backend through B and C", func(t *testing.T) {
		for i := range 20 {
			key := fmt.Sprintf("client-%d", i)
			want, err := a.via(t, client, key)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range []*instance{b, c} {
				in.followsPin(t, client, key, want)
			}
		}
	})

	t.Run("disable on B: A and C stop using the backend", func(t *testing.T) {
		disableAcross(t, all, bes, client)
	})

	t.Run("sessions and backends through both dialects", func(t *testing.T) {
		// Pound dialect on A: pin a key to backend three.
		a.lbctl(t, "session", "add", "/1/0/2", "operator-key")
		poll(t, time.Second, "C (zproxy) lists the session", func() bool {
			_, body := unixDo(t, c.zctl, http.MethodGet, "/listener/0/service/web/sessions", "")
			return strings.Contains(body, "operator-key")
		})
		if got, err := b.via(t, client, "operator-key"); err != nil || got != "three" {
			t.Fatalf("B: operator-key went to %q (%v), want three", got, err)
		}
		// zproxy dialect on C: a backend added at runtime reaches A and B.
		extra := startBackend(t, "127.0.0.5", "extra", echoHandler("extra"))
		c.zproxyAddBackend(t, extra.addr)
		for _, in := range []*instance{a, b} {
			poll(t, time.Second, in.name+" has the runtime backend", func() bool {
				return strings.Contains(in.lbctl(t, "list", "/1/0"), extra.addr)
			})
		}
	})

	var goneAddr string // a backend added, then removed
	t.Run("a weight set and a backend removed on one instance reach the others", func(t *testing.T) {
		goneAddr = weightAndRemoval(t, all, bes, client)
	})

	t.Run("Redis killed under load: no failed request, converge on return", func(t *testing.T) {
		outageDisabled = redisOutage(t, r, all, client)
	})

	t.Run("a fourth instance started late gets the current state", func(t *testing.T) {
		d := startInstance(t, "d", 14, r, false, bes)
		if st := d.backendState(t, outageDisabled); st != "disabled" {
			t.Fatalf("late instance: /1/0/%d is %s, want disabled", outageDisabled, st)
		}
		if list := d.lbctl(t, "list", "/1/0"); !strings.Contains(list, "127.0.0.5") || strings.Contains(list, goneAddr) {
			t.Fatalf("late instance: want the runtime backend, not the one removed (%s):\n%s", goneAddr, list)
		}
		if prio := d.backendColumn(t, 0, 5); prio != "9" {
			t.Fatalf("late instance: /1/0/0 has priority %s, want the 9 set on A", prio)
		}
		if got, err := d.via(t, client, "operator-key"); err != nil || got != "three" {
			t.Fatalf("late instance: operator-key went to %q (%v), want three", got, err)
		}
		// Members are listed from their heartbeats (every second).
		poll(t, 3*time.Second, "lbctl cluster on d lists a, b, c and d", func() bool {
			out := d.lbctl(t, "cluster")
			for _, name := range []string{"a", "b", "c", "d"} {
				if !strings.Contains(out, "\n"+name+" ") {
					return false
				}
			}
			return true
		})
		// a's dashboard timeline: d joined; killed, d leaves once not
		// heard from for three heartbeats.
		timelineEvent(t, a.ctl, "join", `cluster member "d"`, 5*time.Second)
		d.kill()
		timelineEvent(t, a.ctl, "leave", `cluster member "d"`, 8*time.Second)
	})
}

// timelineEvent waits up to d for the dashboard timeline on sock to hold
// an event of kind about object.
func timelineEvent(t *testing.T, sock, kind, object string, d time.Duration) {
	t.Helper()
	poll(t, d, kind+" "+object+" in the timeline", func() bool {
		for _, ev := range readHistory(t, sock).Events {
			if ev.Kind == kind && ev.Object == object {
				return true
			}
		}
		return false
	})
}

// zproxyAddBackend adds the backend at addr to service web through the
// instance's zproxy API.
func (in *instance) zproxyAddBackend(t *testing.T, addr string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := unixDo(t, in.zctl, http.MethodPut, "/listener/0/service/web/backends",
		fmt.Sprintf(`{"address":%q,"port":%s,"weight":1}`, host, port)); code != http.StatusCreated {
		t.Fatalf("zproxy add backend: %d %s", code, body)
	}
}

// redisOutage stops Redis under load through instances a, b and c, makes
// a change on a and a pin on b while it is down, starts it again and
// checks that no request failed and that the changes converge. It
// returns the backend disabled during the outage.
func redisOutage(t *testing.T, r *redisProc, all []*instance, client *http.Client) (outageDisabled int) {
	a, b, c := all[0], all[1], all[2]
	outageDisabled = -1
	var failed, served atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := all[g%3]
			for i := 0; i < 5000; i++ { // bounded; stop ends it sooner
				select {
				case <-stop:
					return
				default:
				}
				if _, err := in.via(t, client, fmt.Sprintf("load-%d-%d", g, i%50)); err != nil {
					failed.Add(1)
				} else {
					served.Add(1)
				}
			}
		}()
	}
	r.stop()
	for _, in := range all {
		poll(t, 5*time.Second, in.name+" reports Redis down", func() bool {
			return strings.Contains(in.lbctl(t, "cluster"), "Redis "+r.sock+" down")
		})
	}
	if out := a.lbctl(t, "list"); !strings.Contains(out, "down since") {
		t.Errorf("lbctl list does not show the outage:\n%s", out)
	}
	_, metrics := unixDo(t, a.ctl, http.MethodGet, "/metrics", "")
	if !strings.Contains(metrics, `lbd_cluster_redis_up{node="a"} 0`) {
		t.Errorf("metrics do not show Redis down")
	}
	// Changes while Redis is down: a disable on A, a pin on B.
	// The pin first, and the disable for another backend: a pin to
	// a backend disabled cluster-wide moves, as it should.
	pinned, err := b.via(t, client, "during-outage")
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"one", "two", "three"} {
		if name != pinned {
			outageDisabled = i
			break
		}
	}
	a.lbctl(t, "disable", fmt.Sprintf("/1/0/%d", outageDisabled))
	atStop := served.Load()
	poll(t, 10*time.Second, "300 more requests served with Redis down", func() bool { return served.Load()-atStop >= 300 })
	r.start()
	for _, in := range []*instance{b, c} {
		poll(t, 5*time.Second, in.name+" got A's disable", func() bool { return in.backendState(t, outageDisabled) == "disabled" })
	}
	for _, in := range []*instance{a, c} {
		in.followsPin(t, client, "during-outage", pinned)
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 || served.Load() == 0 {
		t.Fatalf("%d requests failed, %d served", failed.Load(), served.Load())
	}
	t.Logf("%d requests served across the outage, none failed", served.Load())
	for _, in := range all {
		if n := strings.Count(in.out.String(), "unreachable"); n != 1 {
			t.Errorf("%s logged the outage %d times, want once:\n%s", in.name, n, in.out.String())
		}
		if !strings.Contains(in.out.String(), "reachable again") {
			t.Errorf("%s did not log the return of Redis", in.name)
		}
	}
	return outageDisabled
}

// disableAcross disables backend two on b (Pound socket): a and c stop
// using it; c's zproxy API enables it again and a and b follow.
func disableAcross(t *testing.T, all []*instance, bes []*backend, client *http.Client) {
	a, b, c := all[0], all[1], all[2]
	b.lbctl(t, "disable", "/1/0/1")
	for _, in := range []*instance{a, c} {
		poll(t, time.Second, in.name+" shows /1/0/1 disabled", func() bool { return in.backendState(t, 1) == "disabled" })
		for i := range 30 {
			got, err := in.via(t, client, fmt.Sprintf("after-disable-%d", i))
			if err != nil || got == "two" {
				t.Fatalf("%s: request %d went to %q (%v) after the disable", in.name, i, got, err)
			}
		}
	}
	// zproxy dialect on C: enable it again; A and B follow.
	if code, body := unixDo(t, c.zctl, http.MethodPatch, "/listener/0/service/web/backend/"+
		strings.Replace(bes[1].addr, ":", "-", 1)+"/status", `{"status":"active"}`); code != http.StatusOK {
		t.Fatalf("zproxy enable: %d %s", code, body)
	}
	for _, in := range []*instance{a, b} {
		poll(t, time.Second, in.name+" shows /1/0/1 active again", func() bool { return in.backendState(t, 1) == "active" })
	}
}

// weightAndRemoval sets a weight on a that b and c show in their own
// dialects, and removes on b a backend added on c: a and c stop listing
// and using it. It returns the removed backend's address.
func weightAndRemoval(t *testing.T, all []*instance, bes []*backend, client *http.Client) (goneAddr string) {
	a, b, c := all[0], all[1], all[2]
	// On A's Pound socket: A and B balance by Pound's random, where
	// the weight is the Priority; C's zproxy file balances by round
	// robin, where it is zproxy's Weight.
	a.lbctl(t, "weight", "/1/0/0", "9")
	poll(t, time.Second, "B shows priority 9 on /1/0/0", func() bool { return b.backendColumn(t, 0, 5) == "9" })
	poll(t, time.Second, "C shows weight 9 on one", func() bool {
		_, body := unixDo(t, c.zctl, http.MethodGet, "/listener/0/service/web/backend/"+strings.Replace(bes[0].addr, ":", "-", 1), "")
		return strings.Contains(body, `"weight": 9`)
	})
	// Added on C (zproxy API), removed on B (lbctl, Pound socket).
	gone := startBackend(t, "127.0.0.6", "gone", echoHandler("gone"))
	goneAddr = gone.addr
	c.zproxyAddBackend(t, gone.addr)
	poll(t, time.Second, "B has the backend added on C", func() bool { return strings.Contains(b.lbctl(t, "list", "/1/0"), gone.addr) })
	if out := b.lbctl(t, "list", "/1/0/4"); !strings.Contains(out, gone.addr) {
		t.Fatalf("B's /1/0/4 is not the added backend: %s", out)
	}
	b.lbctl(t, "backend", "rm", "/1/0/4")
	for _, in := range []*instance{a, c} {
		poll(t, time.Second, in.name+" no longer lists the removed backend", func() bool {
			return !strings.Contains(in.lbctl(t, "list", "/1/0"), gone.addr)
		})
		for i := range 30 {
			if got, err := in.via(t, client, fmt.Sprintf("after-remove-%d", i)); err != nil || got == "gone" {
				t.Fatalf("%s: request %d went to %q (%v) after the removal", in.name, i, got, err)
			}
		}
	}
	return goneAddr
}
