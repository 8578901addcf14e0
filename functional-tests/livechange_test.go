package functionaltests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// countingBackend is an HTTP backend that answers "<name> <id>", records
// the ids it served and counts the connections lbd holds to it.
type countingBackend struct {
	*backend
	open atomic.Int64 // connections currently open
	mu   sync.Mutex
	ids  map[string]int
}

func startCountingBackend(t *testing.T, host, name string) *countingBackend {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	cb := &countingBackend{ids: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		id := r.Header.Get("X-Req-Id")
		cb.mu.Lock()
		cb.ids[id]++
		cb.mu.Unlock()
		io.WriteString(w, name+" "+id)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				cb.open.Add(1)
			case http.StateClosed, http.StateHijacked:
				cb.open.Add(-1)
			}
		}}
	cb.backend = &backend{name: name, ln: ln, srv: srv, addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return cb
}

func (cb *countingBackend) served(id string) int {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.ids[id]
}

// liveConfig renders the live-change config: a control socket, Alive 1,
// one service with URL sessions on "sess" over bs, the first backend with
// priority prio.
func liveConfig(port, dir string, prio int, bs []*countingBackend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 3\nClient 5\nGrace 2\nControl \"%s/ctl.sock\"\n", dir)
	fmt.Fprintf(&b, "ListenHTTP\n\tAddress 127.0.0.1\n\tPort %s\n\txHTTP 2\n\tService\n", port)
	b.WriteString("\t\tSession\n\t\t\tType URL\n\t\t\tID \"sess\"\n\t\t\tTTL 60\n\t\tEnd\n")
	for i, be := range bs {
		host, bport, _ := net.SplitHostPort(be.addr)
		fmt.Fprintf(&b, "\t\tBackEnd\n\t\t\tAddress %s\n\t\t\tPort %s\n", host, bport)
		if i == 0 {
			fmt.Fprintf(&b, "\t\t\tPriority %d\n", prio)
		}
		b.WriteString("\t\tEnd\n")
	}
	b.WriteString("\tEnd\nEnd\n")
	return b.String()
}

// ctlClient talks HTTP to lbd's control socket.
func ctlClient(sock string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

// liveDuration is issue 7's 20 s, overridable with LBD_LIVECHANGE_DURATION
// (a Go duration) for quick local runs.
func liveDuration(t *testing.T) time.Duration {
	v := os.Getenv("LBD_LIVECHANGE_DURATION")
	if v == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("LBD_LIVECHANGE_DURATION=%q: want a positive Go duration", v)
	}
	return d
}

// TestLiveChangeUnderLoad is issue 7: under a bounded GET/POST load,
// every 200 ms a backend is disabled or enabled, a session is added, or a
// changed config (another Priority, one more backend) is reloaded with
// SIGUSR1. No client request may fail, and lbd may leak neither
// descriptors nor threads.
func TestLiveChangeUnderLoad(t *testing.T) {
	dur := liveDuration(t)
	ignore := goleak.IgnoreCurrent()
	var bs []*countingBackend
	for i, host := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		bs = append(bs, startCountingBackend(t, host, fmt.Sprintf("be%d", i)))
	}
	cfgs := []string{
		liveConfig("{PORT}", "{DIR}", 5, bs[:3]),
		liveConfig("{PORT}", "{DIR}", 7, bs),
	}
	p := startLBD(t, cfgs[0])
	_, port, _ := net.SplitHostPort(p.addr)
	for i := range cfgs {
		cfgs[i] = strings.NewReplacer("{PORT}", port, "{DIR}", p.dir).Replace(cfgs[i])
	}
	ctl := ctlClient(filepath.Join(p.dir, "ctl.sock"))
	defer ctl.CloseIdleConnections()
	pid := p.cmd.Process.Pid
	baseFDs, _ := procStats(t, pid)
	runLoad(p.addr, loadOpts{clients: 8, perClient: 5, pace: time.Millisecond, dur: 2 * time.Second, prefix: "warm-"})
	_, baseThreads := procStats(t, pid)

	stop := make(chan struct{})
	changes := make(chan []string, 1)
	go func() { changes <- liveChanges(t, p, ctl, cfgs, stop) }()
	results := runLoad(p.addr, loadOpts{clients: 8, perClient: 2000, pace: 20 * time.Millisecond, dur: dur,
		target: func(n, i int, id string) string {
			if i%2 == 0 {
				return fmt.Sprintf("/l?sess=k%d&id=%s", (n+i)%16, id)
			}
			return "/l?id=" + id
		}})
	close(stop)
	problems := <-changes

	for _, pr := range problems {
		t.Error(pr)
	}
	checkLiveResults(t, results, bs)
	if n := bs[3].requests(); n == 0 {
		t.Errorf("backend be3, only in the reloaded config, got no request: reloads did not take effect")
	}
	if out := p.out.String(); strings.Contains(out, "reload failed") {
		t.Errorf("a reload failed:\n%s", lastLines(out, 20))
	}
	checkLBDLeaks(t, p, baseFDs, baseThreads, len(bs), func() int {
		n := 0
		for _, b := range bs {
			n += int(b.open.Load())
		}
		return n
	})
	// Each backend has one keep-alive pool in lbd; more connections than
	// a pool holds means pools of replaced configurations were kept.
	for _, b := range bs {
		if n := b.open.Load(); n > poolPerBackend {
			t.Errorf("%s: lbd still holds %d idle connections to it, one pool holds at most %d",
				b.name, n, poolPerBackend)
		}
	}
	p.kill()
	for _, b := range bs {
		b.stop()
	}
	ctl.CloseIdleConnections()
	goleak.VerifyNone(t, ignore)
}

func (cb *countingBackend) requests() int {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return len(cb.ids)
}

// liveChanges makes one change every 200 ms until stop: enable/disable
// backend 1 or 2 (backend 0 always stays enabled), add a session, and
// reload the other config. It returns what went wrong.
func liveChanges(t *testing.T, p *proc, ctl *http.Client, cfgs []string, stop <-chan struct{}) []string {
	var problems []string
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	disabled := -1 // the backend currently disabled, if any
	cur := 0       // the config in force
	for step := 0; ; step++ {
		select {
		case <-stop:
			if disabled >= 0 { // leave everything enabled for the leak check
				problems = append(problems, ctlDo(ctl, "PUT", fmt.Sprintf("/listener/1/0/%d", disabled), "true")...)
			}
			return problems
		case <-tick.C:
		}
		switch step % 3 {
		case 0:
			if disabled >= 0 {
				problems = append(problems, ctlDo(ctl, "PUT", fmt.Sprintf("/listener/1/0/%d", disabled), "true")...)
				disabled = -1
			} else {
				disabled = 1 + step/3%2
				problems = append(problems, ctlDo(ctl, "DELETE", fmt.Sprintf("/listener/1/0/%d", disabled), "true")...)
			}
		case 1:
			path := fmt.Sprintf("/session/1/0/%d?key=k%d", step/3%3, step%16)
			problems = append(problems, ctlDo(ctl, "PUT", path, "")...)
		case 2:
			cur = 1 - cur
			if err := os.WriteFile(p.cfg, []byte(cfgs[cur]), 0o644); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			p.signal(syscall.SIGUSR1)
		}
	}
}

// ctlDo sends one control request; want, when set, is the exact body.
func ctlDo(c *http.Client, method, path, want string) []string {
	req, err := http.NewRequest(method, "http://lbd"+path, nil)
	if err != nil {
		return []string{err.Error()}
	}
	resp, err := c.Do(req)
	if err != nil {
		return []string{fmt.Sprintf("%s %s: %v", method, path, err)}
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := strings.TrimSpace(string(body))
	if resp.StatusCode != 200 || want != "" && got != want {
		return []string{fmt.Sprintf("%s %s: %d %q", method, path, resp.StatusCode, got)}
	}
	return nil
}

// checkLiveResults asserts that every request got its own 200 answer and
// that no POST was applied twice.
func checkLiveResults(t *testing.T, rs []loadResult, bs []*countingBackend) {
	t.Helper()
	var bad []string
	for _, r := range rs {
		times := 0
		for _, b := range bs {
			times += b.served(r.id)
		}
		switch {
		case r.status != 200:
			bad = append(bad, fmt.Sprintf("failed: %s, served %d times", r, times))
		case !strings.HasSuffix(r.body, " "+r.id) || times == 0:
			bad = append(bad, fmt.Sprintf("wrong answer %q: %s", r.body, r))
		case r.method == "POST" && times > 1:
			bad = append(bad, fmt.Sprintf("POST applied %d times: %s", times, r))
		}
	}
	t.Logf("%d requests, %d problems", len(rs), len(bad))
	for i, b := range bad {
		if i == 15 {
			t.Errorf("... and %d more", len(bad)-i)
			break
		}
		t.Error(b)
	}
}
