package functionaltests

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// procStats reads lbd's open descriptors and OS threads from /proc.
func procStats(t *testing.T, pid int) (fds, threads int) {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("lbd fds: %v", err)
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("lbd status: %v", err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return len(ents), threads
}

// What lbd may legitimately hold after the load: one idle keep-alive pool
// per backend (backend.DefaultMaxIdle). Threads only grow in Go, so they
// get a generous allowance over the warmed-up baseline.
const (
	poolPerBackend = 16
	threadSlack    = 16
)

// checkLBDLeaks waits (bounded) until lbd's descriptors are back to the
// baseline plus the backend connections still open on the backends' side
// (each pooled connection has one fd at each end), and no more than the
// pools can hold. A descriptor lbd keeps after the backend closed its end,
// or beyond the pools' capacity, is a leak.
func checkLBDLeaks(t *testing.T, p *proc, baseFDs, baseThreads, nBackends int, backendConns func() int) {
	t.Helper()
	var fds, threads, conns int
	for end := time.Now().Add(5 * time.Second); ; {
		fds, threads = procStats(t, p.cmd.Process.Pid)
		conns = backendConns()
		if fds-baseFDs <= conns && fds-baseFDs <= poolPerBackend*nBackends {
			break
		}
		if time.Now().After(end) {
			t.Errorf("lbd fd leak: %d fds, baseline %d, backends hold %d connections, pools hold at most %d",
				fds, baseFDs, conns, poolPerBackend*nBackends)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("lbd: fds %d -> %d, threads %d -> %d, backends hold %d connections", baseFDs, fds, baseThreads, threads, conns)
	if threads > baseThreads+threadSlack {
		t.Errorf("lbd threads grew from %d to %d", baseThreads, threads)
	}
}

// faultEvent is a fault the scenario injected: it began at at and was
// complete at end.
type faultEvent struct {
	be      *faultBackend
	at, end time.Time
}

// scene is a running fault scenario: the backends, and the log of what
// was done to them, which explains the failures clients may see.
type scene struct {
	start    time.Time
	bs       []*faultBackend
	mu       sync.Mutex
	kills    []faultEvent // backend crashed: requests in flight there may fail
	recovers []faultEvent // backend listening again
	allDown  [][2]time.Time
}

// at sleeps until d after the scene started.
func (s *scene) at(d time.Duration) { time.Sleep(time.Until(s.start.Add(d))) }

func (s *scene) kill(bs ...*faultBackend) {
	for _, b := range bs {
		at := time.Now()
		b.kill()
		s.mu.Lock()
		s.kills = append(s.kills, faultEvent{b, at, time.Now()})
		s.mu.Unlock()
	}
}

func (s *scene) refuse(b *faultBackend) { b.refuse() }

func (s *scene) restart(t *testing.T, bs ...*faultBackend) {
	for _, b := range bs {
		if err := b.start(); err != nil {
			t.Errorf("restart %s: %v", b.name, err)
		}
		s.mu.Lock()
		now := time.Now()
		s.recovers = append(s.recovers, faultEvent{b, now, now})
		s.mu.Unlock()
	}
}

// faultConfig is a one-service config with short timers: Alive 1 so that
// resurrection is quick, TimeOut 1 so that a hanging backend costs 1 s.
func faultConfig(zproxy bool, bs []*faultBackend) string {
	var b strings.Builder
	b.WriteString("Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 1\nConnTO 1\nClient 5\nGrace 1\n")
	b.WriteString("ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n")
	if zproxy {
		b.WriteString(zproxyMark)
	}
	b.WriteString("\tService\n")
	for _, be := range bs {
		b.WriteString(be.block())
	}
	b.WriteString("\tEnd\nEnd\n")
	return b.String()
}

const faultAlive = time.Second // the Alive of faultConfig

type faultCase struct {
	name   string
	zproxy bool
	dur    time.Duration // load duration
	// script injects the faults; bs[0] is the faulty backend unless the
	// case says otherwise.
	script func(t *testing.T, s *scene)
}

// TestFaultsNoRequestLost is issue 5's "no request lost" matrix: under a
// bounded GET/POST load one backend of three is killed, refused, hung,
// made to answer garbage or to close mid-body, or flapped; every failure
// a client sees must be explained by the fault, no POST may be applied
// twice, and dead backends must be back within Alive + 1 s.
func TestFaultsNoRequestLost(t *testing.T) {
	cases := []faultCase{
		{name: "kill and restart", dur: 5 * time.Second, script: func(t *testing.T, s *scene) {
			s.at(700 * time.Millisecond)
			s.kill(s.bs[0])
			s.at(2200 * time.Millisecond)
			s.restart(t, s.bs[0])
		}},
		{name: "restart at once", dur: 5 * time.Second, script: func(t *testing.T, s *scene) {
			// A supervisor restarting the backend: lbd's pooled
			// connections to it all went stale, but it never refuses.
			for k := 0; k < 4; k++ {
				s.at(time.Duration(700+600*k) * time.Millisecond)
				s.kill(s.bs[0])
				s.restart(t, s.bs[0])
			}
		}},
		{name: "refuse connections", dur: 5 * time.Second, script: func(t *testing.T, s *scene) {
			s.at(700 * time.Millisecond)
			s.refuse(s.bs[0])
			s.at(2200 * time.Millisecond)
			s.restart(t, s.bs[0])
		}},
		{name: "hang pound 503", dur: 4500 * time.Millisecond, script: modeWindow(modeHang, 2700*time.Millisecond)},
		{name: "hang zproxy 504", zproxy: true, dur: 4500 * time.Millisecond, script: modeWindow(modeHang, 2700*time.Millisecond)},
		{name: "garbage response", dur: 4 * time.Second, script: modeWindow(modeGarbage, 2200*time.Millisecond)},
		{name: "close mid-body", dur: 4 * time.Second, script: modeWindow(modeMidBody, 2200*time.Millisecond)},
		{name: "flap every second", dur: 8 * time.Second, script: func(t *testing.T, s *scene) {
			for k := 0; k < 3; k++ {
				s.at(time.Duration(500+2000*k) * time.Millisecond)
				s.kill(s.bs[0])
				s.at(time.Duration(1500+2000*k) * time.Millisecond)
				s.restart(t, s.bs[0])
			}
		}},
		{name: "all backends down", dur: 5 * time.Second, script: func(t *testing.T, s *scene) {
			s.at(700 * time.Millisecond)
			from := time.Now()
			s.kill(s.bs...)
			s.at(2200 * time.Millisecond)
			s.restart(t, s.bs...)
			s.mu.Lock()
			s.allDown = append(s.allDown, [2]time.Time{from, time.Now().Add(faultAlive + time.Second)})
			s.mu.Unlock()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runFaultCase(t, tc) })
	}
}

// modeWindow switches bs[0] to m at 0.7 s and back to normal at until.
func modeWindow(m faultMode, until time.Duration) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		s.at(700 * time.Millisecond)
		s.bs[0].setMode(m)
		s.at(until)
		s.bs[0].setMode(modeOK)
	}
}

func runFaultCase(t *testing.T, tc faultCase) {
	ignore := goleak.IgnoreCurrent()
	bs := []*faultBackend{
		newFaultBackend(t, "127.0.0.2", "a"),
		newFaultBackend(t, "127.0.0.3", "b"),
		newFaultBackend(t, "127.0.0.4", "c"),
	}
	p := startLBD(t, faultConfig(tc.zproxy, bs))
	pid := p.cmd.Process.Pid
	baseFDs, _ := procStats(t, pid)
	// Warm up so that the thread baseline includes the runtime's usual set.
	runLoad(p.addr, loadOpts{clients: 8, perClient: 5, pace: time.Millisecond, dur: 2 * time.Second, prefix: "warm-"})
	_, baseThreads := procStats(t, pid)

	s := &scene{start: time.Now(), bs: bs}
	done := make(chan struct{})
	go func() { defer close(done); tc.script(t, s) }()
	results := runLoad(p.addr, loadOpts{clients: 8, perClient: 600, pace: 10 * time.Millisecond, dur: tc.dur})
	<-done
	for _, b := range bs {
		b.setMode(modeOK)
	}

	checkFaultResults(t, s, results, tc.zproxy)
	checkLBDLeaks(t, p, baseFDs, baseThreads, len(bs), func() int {
		n := 0
		for _, b := range bs {
			n += b.openConns()
		}
		return n
	})
	if t.Failed() {
		t.Logf("lbd output:\n%s", lastLines(p.out.String(), 40))
	}
	p.kill()
	for _, b := range bs {
		b.kill()
	}
	goleak.VerifyNone(t, ignore)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// seenAt is one arrival of a request id at a backend.
type seenAt struct {
	be *faultBackend
	a  arrival
}

// checkFaultResults asserts issue 5's rules over one scenario's results.
func checkFaultResults(t *testing.T, s *scene, rs []loadResult, zproxy bool) {
	t.Helper()
	byID := map[string][]seenAt{}
	for _, b := range s.bs {
		for _, a := range b.seen() {
			byID[a.id] = append(byID[a.id], seenAt{b, a})
		}
	}
	hangStatus := 503
	if zproxy {
		hangStatus = 504
	}
	var bad []string
	outcome := map[string]int{}
	var loadEnd time.Time
	for _, r := range rs {
		if r.end.After(loadEnd) {
			loadEnd = r.end
		}
		arr := byID[r.id]
		if r.method == "POST" && len(arr) > 1 {
			bad = append(bad, fmt.Sprintf("POST applied %d times: %s, seen by %s", len(arr), r, seenWhere(arr)))
		}
		if r.status == 200 {
			outcome["200"]++
			if !answeredBy(r, arr) {
				bad = append(bad, fmt.Sprintf("200 with another request's body %q: %s, seen by %s", r.body, r, seenWhere(arr)))
			}
			continue
		}
		why := explain(s, r, arr, hangStatus)
		if why == "" {
			outcome["unexplained"]++
			bad = append(bad, fmt.Sprintf("unexplained failure: %s, seen by %s", r, seenWhere(arr)))
			continue
		}
		outcome[why]++
	}
	t.Logf("%d requests: %v", len(rs), outcome)
	for i, b := range bad {
		if i == 15 {
			t.Errorf("... and %d more", len(bad)-i)
			break
		}
		t.Error(b)
	}
	checkRecovery(t, s, loadEnd)
}

// explain names the injected fault that accounts for a failed request,
// or returns "" when none does.
func explain(s *scene, r loadResult, arr []seenAt, hangStatus int) string {
	want := map[faultMode]int{modeHang: hangStatus, modeGarbage: 503, modeMidBody: 0}
	for _, x := range arr {
		if x.a.mode != modeOK && r.status == want[x.a.mode] {
			return x.a.mode.String()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.status != 503 {
		return ""
	}
	for _, w := range s.allDown {
		if !r.start.Before(w[0]) && !r.start.After(w[1]) {
			return "no backend alive"
		}
	}
	for _, k := range s.kills {
		if !onlyAt(arr, k.be) || r.end.Before(k.at) {
			continue
		}
		if !r.start.After(k.end) {
			return "killed in flight"
		}
		// A POST may also meet a pooled connection the crash closed,
		// until lbd sees the backend dead: it must not be resent.
		if r.method == "POST" && len(arr) == 0 && r.start.Before(k.end.Add(faultAlive)) {
			return "POST on a connection the crash closed"
		}
	}
	return ""
}

func onlyAt(arr []seenAt, b *faultBackend) bool {
	for _, x := range arr {
		if x.be != b {
			return false
		}
	}
	return true
}

// answeredBy reports whether r's body is the answer to r itself.
func answeredBy(r loadResult, arr []seenAt) bool {
	for _, x := range arr {
		if x.a.mode == modeOK && r.body == x.be.name+" "+r.id {
			return true
		}
	}
	return false
}

func seenWhere(arr []seenAt) string {
	if len(arr) == 0 {
		return "no backend"
	}
	var s []string
	for _, x := range arr {
		s = append(s, fmt.Sprintf("%s(%s@%s)", x.be.name, x.a.mode, x.a.at.Format("15:04:05.000")))
	}
	return strings.Join(s, ",")
}

// checkRecovery asserts that a backend listening again is back in
// rotation within Alive + 1 s, for every recovery followed by that much
// up time under load.
func checkRecovery(t *testing.T, s *scene, loadEnd time.Time) {
	t.Helper()
	limit := faultAlive + time.Second
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.recovers {
		until := loadEnd
		for _, k := range s.kills {
			if k.be == rec.be && k.at.After(rec.at) && k.at.Before(until) {
				until = k.at
			}
		}
		if until.Sub(rec.at) < limit+300*time.Millisecond {
			continue // down again (or load over) before the deadline
		}
		first := rec.be.firstOKAfter(rec.at)
		if first.IsZero() || first.Sub(rec.at) > limit {
			t.Errorf("backend %s restarted at %s: first request at %s, want within %v",
				rec.be.name, rec.at.Format("15:04:05.000"), first.Format("15:04:05.000"), limit)
		}
	}
}
