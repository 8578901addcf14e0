package functionaltests

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	lbexplain "lbd/explain"
)

// The explainer's session lookup and dry-run pick, checked against the
// backend the next real request reaches.

// beLines is a BackEnd (or Emergency) block for b with extra lines.
func beLines(kind string, b *backend, extra ...string) string {
	host, port, _ := net.SplitHostPort(b.addr)
	s := fmt.Sprintf("\t\t%s\n\t\t\tAddress %s\n\t\t\tPort %s\n", kind, host, port)
	for _, e := range extra {
		s += "\t\t\t" + e + "\n"
	}
	return s + "\t\tEnd\n"
}

// who sends GET path (with headers) and returns the echo backend's name.
func who(t *testing.T, addr, path string, headers ...string) string {
	t.Helper()
	status, body := getBody(t, "http://"+addr+path, headers...)
	if status != 200 {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return strings.Fields(body + " ?")[0]
}

func TestRouteSessions(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	cfg := "Daemon 0\nLogLevel 0\nAlive 1\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" +
		"\tService \"cookie\"\n\t\tURL \"^/c/\"\n\t\tSession\n\t\t\tType COOKIE\n\t\t\tID \"sid\"\n\t\t\tTTL 300\n\t\tEnd\n" + a.block() + b.block() + "\tEnd\n" +
		"\tService \"ip\"\n\t\tURL \"^/ip/\"\n\t\tSession\n\t\t\tType IP\n\t\t\tTTL 300\n\t\tEnd\n" + a.block() + b.block() + "\tEnd\nEnd\n"
	p := startLBD(t, cfg)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	addrOf := map[string]string{"a": a.addr, "b": b.addr}

	r := explainVia(t, sock, "GET", "/c/x")
	if s := r.Session; s == nil || s.HasKey || s.Found || s.Pinned || r.Balancer == nil || r.Backend.Via != "balancer" {
		t.Fatalf("no cookie: session %+v, via %s", r.Session, r.Backend.Via)
	}
	r = explainVia(t, sock, "-H", "Cookie: sid=K1", "GET", "/c/x")
	if s := r.Session; s == nil || !s.HasKey || s.Key != "K1" || s.Found || r.Balancer == nil {
		t.Fatalf("unknown key: session %+v", r.Session)
	}
	first := who(t, p.addr, "/c/x", "Cookie: sid=K1") // the real request pins K1
	r = explainVia(t, sock, "-H", "Cookie: sid=K1", "GET", "/c/x")
	if s := r.Session; s == nil || !s.Found || !s.Pinned || r.Balancer != nil || r.Backend.Via != "session" ||
		r.Backend.Address != addrOf[first] || s.Expires == "" {
		t.Fatalf("pinned key: session %+v backend %+v, the real request went to %s", r.Session, r.Backend, first)
	}
	for range 3 {
		if got := who(t, p.addr, "/c/x", "Cookie: sid=K1"); got != first {
			t.Fatalf("a pinned request went to %s, not %s", got, first)
		}
	}
	// A disabled backend does not hold its sessions: the explanation says
	// so, and names the backend the balancer picks instead.
	idx := *r.Session.Backend
	if _, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "disable", fmt.Sprintf("/1/0/%d", idx)); code != 0 {
		t.Fatal(errOut)
	}
	r = explainVia(t, sock, "-H", "Cookie: sid=K1", "GET", "/c/x")
	if s := r.Session; s == nil || !s.Found || s.Pinned || !strings.Contains(s.Why, "disabled") || r.Backend.Via != "balancer" ||
		r.Backend.Address == addrOf[first] {
		t.Fatalf("session on a disabled backend: %+v, backend %+v", r.Session, r.Backend)
	}
	if got := who(t, p.addr, "/c/x", "Cookie: sid=K1"); addrOf[got] != r.Backend.Address {
		t.Fatalf("the request went to %s, the explanation said %s", got, r.Backend.Address)
	}
	// IP sessions: the client address is the key.
	first = who(t, p.addr, "/ip/x")
	r = explainVia(t, sock, "GET", "/ip/x")
	if s := r.Session; s == nil || s.Key != "127.0.0.1" || !s.Pinned || r.Backend.Address != addrOf[first] {
		t.Fatalf("IP session: %+v backend %+v, the real request went to %s", r.Session, r.Backend, first)
	}
	r = explainVia(t, sock, "-a", "192.0.2.9", "GET", "/ip/x")
	if s := r.Session; s == nil || s.Key != "192.0.2.9" || s.Found || r.Request.Client != "192.0.2.9" {
		t.Fatalf("IP session of another client: %+v", r.Session)
	}
}

// holdBackend answers /hold/... only when released, everything else at
// once, and sleeps delay before each answer.
type holdBackend struct {
	*backend
	release chan struct{}
	once    sync.Once
}

func startHoldBackend(t *testing.T, host, name string, delay time.Duration) *holdBackend {
	h := &holdBackend{release: make(chan struct{})}
	h.backend = startBackend(t, host, name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/hold") {
			<-h.release
		}
		time.Sleep(delay)
		fmt.Fprintf(w, "%s %s\n", name, r.URL.Path)
	}))
	t.Cleanup(h.free)
	return h
}

func (h *holdBackend) free() { h.once.Do(func() { close(h.release) }) }

func TestRouteAlgorithms(t *testing.T) {
	a := startHoldBackend(t, "127.0.0.2", "a", 0)
	b := startHoldBackend(t, "127.0.0.3", "b", 0)
	slow := startHoldBackend(t, "127.0.0.4", "slow", 40*time.Millisecond)
	svc := func(name, algo string, bes ...string) string {
		return fmt.Sprintf("\tService %q\n\t\tURL \"^/%s/\"\n\t\t%s\n%s\tEnd\n", name, name, algo, strings.Join(bes, ""))
	}
	cfg := "Daemon 0\nLogLevel 0\nAlive 30\nTimeOut 5\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" +
		svc("random", "Balancer random", beLines("BackEnd", a.backend, "Priority 1"), beLines("BackEnd", b.backend, "Priority 3")) +
		svc("iwrr", "Balancer iwrr", beLines("BackEnd", a.backend, "Priority 1"), beLines("BackEnd", b.backend, "Priority 2")) +
		svc("rr", "RoutingPolicy ROUND_ROBIN", beLines("BackEnd", a.backend, "Weight 1"), beLines("BackEnd", b.backend, "Weight 2")) +
		svc("lc", "RoutingPolicy LEAST_CONNECTIONS", beLines("BackEnd", a.backend), beLines("BackEnd", b.backend)) +
		svc("rt", "RoutingPolicy RESPONSE_TIME", beLines("BackEnd", slow.backend), beLines("BackEnd", b.backend)) +
		svc("pc", "RoutingPolicy PENDING_CONNECTIONS", beLines("BackEnd", a.backend, "Weight 1"), beLines("BackEnd", b.backend, "Weight 2")) +
		"End\n"
	p := startLBD(t, cfg)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	names := map[string]string{a.addr: "a", b.addr: "b", slow.addr: "slow"}

	t.Run("random", func(t *testing.T) {
		r := explainVia(t, sock, "GET", "/random/x")
		bal := r.Balancer
		if bal == nil || bal.Algorithm != "random" || bal.Mode != "pound" || bal.Chosen == nil {
			t.Fatalf("balancer %+v", bal)
		}
		c := bal.Groups[0].Candidates
		if c[0].Weight != 1 || c[1].Weight != 3 || c[0].Share != 0.25 || c[1].Share != 0.75 || c[0].Priority != 1 {
			t.Fatalf("candidates %+v: want Priority as the weight, shares 1/4 and 3/4", c)
		}
		if !strings.Contains(bal.Why, "weighted random") {
			t.Fatalf("why %q", bal.Why)
		}
	})
	// The deterministic algorithms: the dry run names the backend the next
	// real request reaches, request after request.
	for _, tc := range []struct{ name, algo, mode, why string }{
		{"iwrr", "iwrr", "pound", "slot"}, {"rr", "ROUND_ROBIN", "zproxy", "slot"},
		{"pc", "PENDING_CONNECTIONS", "zproxy", "pending/weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 6 {
				r := explainVia(t, sock, "GET", "/"+tc.name+"/x")
				bal := r.Balancer
				if bal == nil || bal.Algorithm != tc.algo || bal.Mode != tc.mode || !strings.Contains(bal.Why, tc.why) {
					t.Fatalf("balancer %+v", bal)
				}
				if tc.mode == "zproxy" && bal.ServicePriority != 1 {
					t.Fatalf("service priority %d", bal.ServicePriority)
				}
				if got := who(t, p.addr, "/"+tc.name+"/x"); names[r.Backend.Address] != got {
					t.Fatalf("request %d: explained %s, went to %s (%s)", i, r.Backend.Address, got, bal.Why)
				}
			}
		})
	}
	t.Run("least connections", func(t *testing.T) {
		done := make(chan string, 1)
		go func() {
			_, body := getBody(t, "http://"+p.addr+"/lc/hold")
			done <- body
		}()
		var r *lbexplain.Route
		for deadline := time.Now().Add(5 * time.Second); ; {
			r = explainVia(t, sock, "GET", "/lc/x")
			if r.Balancer.Groups[0].Candidates[0].Active == 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		c := r.Balancer.Groups[0].Candidates
		if c[0].Active != 1 || c[0].Score != "1/1" || c[1].Score != "0/1" || *r.Balancer.Chosen != 1 ||
			!strings.Contains(r.Balancer.Why, "established+pending") {
			t.Fatalf("with one request held on a: %+v, chosen %d, %s", c, *r.Balancer.Chosen, r.Balancer.Why)
		}
		if got := who(t, p.addr, "/lc/x"); got != "b" {
			t.Fatalf("went to %s, the explanation said b", got)
		}
		a.free()
		if body := <-done; !strings.HasPrefix(body, "a ") {
			t.Fatalf("the held request: %q", body)
		}
	})
	t.Run("response time", func(t *testing.T) {
		for range 4 { // each gets a sample: the slow one first (no sample goes first)
			who(t, p.addr, "/rt/x")
		}
		r := explainVia(t, sock, "GET", "/rt/x")
		c := r.Balancer.Groups[0].Candidates
		if c[0].LatencyNS < int64(40*time.Millisecond) || c[1].LatencyNS <= 0 || c[1].LatencyNS >= c[0].LatencyNS ||
			!strings.HasSuffix(c[0].Score, "/1") || r.Backend.Address != b.addr || !strings.Contains(r.Balancer.Why, "latency/weight") {
			t.Fatalf("latencies %+v, chose %s: %s", c, r.Backend.Address, r.Balancer.Why)
		}
		if got := who(t, p.addr, "/rt/x"); got != "b" {
			t.Fatalf("went to %s, the explanation said b", got)
		}
	})
}

func TestRouteEmergency(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	e := startBackend(t, "127.0.0.4", "e", echoHandler("e"))
	cfg := "Daemon 0\nLogLevel 0\nAlive 30\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n" +
		a.block() + b.block() + beLines("Emergency", e) + "\tEnd\nEnd\n"
	p := startLBD(t, cfg)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	r := explainVia(t, sock, "GET", "/")
	g := r.Balancer.Groups
	if len(g) != 2 || !g[1].Emergency || !strings.Contains(g[1].Why, "not tried") || *r.Balancer.Chosen > 1 {
		t.Fatalf("with regular backends up: %+v", r.Balancer)
	}
	for _, path := range []string{"/1/0/0", "/1/0/1"} {
		if _, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "disable", path); code != 0 {
			t.Fatal(errOut)
		}
	}
	r = explainVia(t, sock, "GET", "/")
	g = r.Balancer.Groups
	if !strings.Contains(g[0].Why, "no available backend") || g[0].Candidates[0].Reason != "disabled" ||
		g[0].Candidates[1].Reason != "disabled" || *r.Balancer.Chosen != 2 || r.Backend.Address != e.addr {
		t.Fatalf("with regular backends disabled: %+v", r.Balancer)
	}
	if got := who(t, p.addr, "/"); got != "e" {
		t.Fatalf("went to %s, the explanation said the emergency backend", got)
	}
	if _, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "disable", "/1/0/2"); code != 0 {
		t.Fatal(errOut)
	}
	r = explainVia(t, sock, "GET", "/")
	if r.Backend != nil || r.Reply == nil || r.Reply.Status != 503 || r.Reply.Kind != "no backend" {
		t.Fatalf("with every backend disabled: backend %+v reply %+v", r.Backend, r.Reply)
	}
	if status, _ := getBody(t, "http://"+p.addr+"/"); status != 503 {
		t.Fatalf("lbd answered %d, the explanation said 503", status)
	}
}
