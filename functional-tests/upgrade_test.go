package functionaltests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// upgradeConfig is one service of three backends with cookie sessions,
// a Pound control socket and a PID file.
func upgradeConfig(a, b, c *backend) string {
	return "Daemon 0\nLogLevel 0\nAlive 1\nClient 5\nTimeOut 5\nGrace 10\n" +
		"Control \"{DIR}/ctl.sock\"\nPIDFile \"{DIR}/lbd.pid\"\n" +
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService \"app\"\n" +
		a.block() + b.block() + c.block() +
		"\t\tSession\n\t\t\tType COOKIE\n\t\t\tID \"sid\"\n\t\t\tTTL 300\n\t\tEnd\n\tEnd\nEnd\n"
}

// pidAlive reports whether pid runs (a zombie has ended).
func pidAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}

// readPID reads a PID file.
func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("PID file %s: %q", path, b)
	}
	return pid
}

// killOnCleanup stops an lbd this test made (a successor is no child of
// the test, so proc.kill does not reach it).
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		if pidAlive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// waitGone waits until pid has exited.
func waitGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for pidAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs after %s", pid, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lbctlUpgrade runs lbctl upgrade on the socket and returns the new pid.
func lbctlUpgrade(t *testing.T, sock string) int {
	t.Helper()
	out, err := exec.Command(binary(t, "lbctl"), "-s", sock, "-j", "upgrade").CombinedOutput()
	if err != nil {
		t.Fatalf("lbctl upgrade: %v\n%s", err, out)
	}
	var r struct{ PID, Previous int }
	if err := json.Unmarshal(out, &r); err != nil || r.PID == 0 {
		t.Fatalf("lbctl upgrade printed %q (%v)", out, err)
	}
	killOnCleanup(t, r.PID)
	return r.PID
}

// loadStats counts every request of the load generator.
type loadStats struct {
	ok, failed, resets atomic.Int64
	mu                 sync.Mutex
	pinned             map[string]map[string]bool // session key -> backends seen
	errs               []string
}

func (s *loadStats) fail(err error) {
	s.failed.Add(1)
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		s.resets.Add(1)
	}
	s.mu.Lock()
	if len(s.errs) < 10 {
		s.errs = append(s.errs, err.Error())
	}
	s.mu.Unlock()
}

// runUpgradeLoad sends POSTs (never retried by net/http, so every failure is
// counted) with a session cookie until stop closes, from keep-alive and
// one-shot clients; it returns when all have stopped. Bounded: at most
// perClient requests each.
func runUpgradeLoad(addr string, stop <-chan struct{}, st *loadStats) *sync.WaitGroup {
	const keepAlive, oneShot, perClient, sessions = 6, 2, 50000, 24
	// Each session is made by one request first: two clients whose first
	// requests with a new key cross both find no session and are
	// balanced each on its own (in any proxy), which is not what this
	// test is about; it is about sessions surviving the upgrades.
	for k := range sessions {
		key := fmt.Sprintf("k%d", k)
		req, _ := http.NewRequest("POST", "http://"+addr+"/load", strings.NewReader("payload"))
		req.Header.Set("Cookie", "sid="+key)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			st.fail(err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		st.pinned[key] = map[string]bool{resp.Header.Get("X-Backend"): true}
	}
	var wg sync.WaitGroup
	for i := range keepAlive + oneShot {
		tr := &http.Transport{DisableKeepAlives: i >= keepAlive, MaxIdleConnsPerHost: 1}
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tr.CloseIdleConnections()
			for n := 0; n < perClient; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("k%d", (i*7+n)%sessions)
				req, _ := http.NewRequest("POST", "http://"+addr+"/load", strings.NewReader("payload"))
				req.Header.Set("Cookie", "sid="+key)
				resp, err := client.Do(req)
				if err != nil {
					st.fail(err)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || !bytes.Contains(body, []byte("body=7")) {
					st.fail(fmt.Errorf("status %d, %v, %q", resp.StatusCode, err, body))
					continue
				}
				st.ok.Add(1)
				st.mu.Lock()
				if st.pinned[key] == nil {
					st.pinned[key] = map[string]bool{}
				}
				st.pinned[key][resp.Header.Get("X-Backend")] = true
				st.mu.Unlock()
			}
		}()
	}
	return &wg
}

// zService is the zproxy view of the service under test.
type zService struct {
	Backends []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Weight int    `json:"weight"`
	} `json:"backends"`
	Sessions []struct {
		ID      string `json:"id"`
		Backend string `json:"backend-id"`
	} `json:"sessions"`
}

func getZService(t *testing.T, sock string) zService {
	t.Helper()
	code, body := control(t, unixClient(sock), "GET", "/listener/0/service/app")
	var s zService
	if code != 200 || json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("GET service: %d %s", code, body)
	}
	return s
}

func zproxyCall(t *testing.T, sock, method, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	resp, err := unixClient(sock).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
}

// TestUpgradeUnderLoad replaces lbd four times (lbctl upgrade three
// times, SIGUSR2 once) under steady load from keep-alive and one-shot
// clients: not one request fails and no connection is reset. The PID
// file follows each new process, every old one drains and exits, and the
// new ones keep the sessions (each session key stays on its backend
// throughout), the disabled backend, the backend added at runtime, the
// weight set at runtime and the removal of a backend of the file.
func TestUpgradeUnderLoad(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	c := startBackend(t, "127.0.0.4", "c", echoHandler("c"))
	d := startBackend(t, "127.0.0.5", "d", echoHandler("d"))
	dir := t.TempDir()
	zsock := filepath.Join(dir, "z.sock")
	p := startLBD(t, upgradeConfig(a, b, c), "-C", zsock)
	ctl, pidFile := filepath.Join(p.dir, "ctl.sock"), filepath.Join(p.dir, "lbd.pid")
	waitSocket(t, zsock)

	// Runtime changes: c disabled, d added with weight 3, a's weight set
	// to 7 and b removed (lbd's extensions).
	zproxyCall(t, zsock, "PATCH", "/listener/0/service/app/backend/"+zid(c)+"/status", `{"status":"disabled"}`)
	zproxyCall(t, zsock, "PUT", "/listener/0/service/app/backends",
		fmt.Sprintf(`{"address":"127.0.0.5","port":%d,"weight":3}`, d.port))
	zproxyCall(t, zsock, "PATCH", "/listener/0/service/app/backend/"+zid(a), `{"weight":7}`)
	zproxyCall(t, zsock, "DELETE", "/listener/0/service/app/backend/"+zid(b), "")

	st := &loadStats{pinned: map[string]map[string]bool{}}
	stop := make(chan struct{})
	wg := runUpgradeLoad(p.addr, stop, st)
	time.Sleep(300 * time.Millisecond)
	before := getZService(t, zsock)

	upgradeFourTimes(t, p.cmd.Process.Pid, ctl, pidFile, st)
	close(stop)
	wg.Wait()

	// The processes share the test's output pipe, so the first one's
	// end is seen in /proc and its log, not by waiting for the pipe.
	waitGone(t, p.cmd.Process.Pid, 5*time.Second)
	if n := strings.Count(p.out.String(), "handed over; exiting"); n != 4 {
		t.Errorf("%d processes said they handed over, want 4:\n%s", n, p.out.String())
	}
	t.Logf("%d requests answered, %d failed, %d reset", st.ok.Load(), st.failed.Load(), st.resets.Load())
	if st.failed.Load() != 0 || st.resets.Load() != 0 {
		t.Errorf("%d failed, %d reset; first errors: %q\n%s", st.failed.Load(), st.resets.Load(), st.errs, p.out.String())
	}
	if st.ok.Load() < 200 {
		t.Errorf("only %d requests answered: the load did not run", st.ok.Load())
	}
	for key, seen := range st.pinned {
		if len(seen) != 1 {
			t.Errorf("session %s went to backends %v: a session was lost", key, seen)
		}
	}

	checkCarriedOver(t, before, getZService(t, zsock), a, b, c, d)

	// The fifth process counts the four upgrades that led to it.
	_, metrics := unixDo(t, ctl, http.MethodGet, "/metrics", "")
	for _, want := range []string{"\nlbd_upgrades_total 4\n", "\nlbd_started_by_upgrade 1\n"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics after four upgrades lack %q:\n%s", strings.TrimSpace(want), grepLines(metrics, "upgrade"))
		}
	}
}

// upgradeFourTimes replaces the lbd whose pid is first four times, the
// third by SIGUSR2 and the others by lbctl upgrade on ctl, checking that
// the PID file follows and each old process exits.
func upgradeFourTimes(t *testing.T, first int, ctl, pidFile string, st *loadStats) {
	t.Helper()
	old := first
	for round := 1; round <= 4; round++ {
		var pid int
		if round == 3 {
			if err := syscall.Kill(old, syscall.SIGUSR2); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for pid = readPID(t, pidFile); pid == old; pid = readPID(t, pidFile) {
				if time.Now().After(deadline) {
					t.Fatal("SIGUSR2: the PID file never changed")
				}
				time.Sleep(20 * time.Millisecond)
			}
			killOnCleanup(t, pid)
		} else {
			pid = lbctlUpgrade(t, ctl)
		}
		if got := readPID(t, pidFile); got != pid {
			t.Fatalf("round %d: PID file says %d, the new process is %d", round, got, pid)
		}
		waitGone(t, old, 15*time.Second)
		t.Logf("round %d: pid %d replaced %d; %d requests so far", round, pid, old, st.ok.Load())
		old = pid
		time.Sleep(300 * time.Millisecond)
	}
}

// checkCarriedOver compares the zproxy service before the upgrades with
// after: c still disabled, a's runtime weight 7, b still removed, the
// runtime backend d active with weight 3, every session on its backend.
func checkCarriedOver(t *testing.T, before, after zService, a, b, c, d *backend) {
	t.Helper()
	status := map[string]string{}
	weight := map[string]int{}
	for _, be := range after.Backends {
		status[be.ID], weight[be.ID] = be.Status, be.Weight
	}
	aid, bid := zid(a), zid(b)
	cid, did := zid(c), zid(d)
	if status[cid] != "disabled" {
		t.Errorf("backend c is %q after the upgrades, want disabled", status[cid])
	}
	if weight[aid] != 7 {
		t.Errorf("backend a has weight %d after the upgrades, want the 7 set at runtime", weight[aid])
	}
	if _, ok := status[bid]; ok || len(after.Backends) != 3 {
		t.Errorf("the removed backend b came back after the upgrades: %+v", after.Backends)
	}
	if status[did] != "active" || weight[did] != 3 {
		t.Errorf("runtime backend d is %q weight %d after the upgrades, want active weight 3", status[did], weight[did])
	}
	was := map[string]string{}
	for _, s := range before.Sessions {
		was[s.ID] = s.Backend
	}
	kept := 0
	for _, s := range after.Sessions {
		if b, ok := was[s.ID]; ok {
			kept++
			if b != s.Backend {
				t.Errorf("session %s moved from %s to %s", s.ID, b, s.Backend)
			}
		}
	}
	if len(before.Sessions) == 0 || kept != len(before.Sessions) {
		t.Errorf("%d of %d sessions kept", kept, len(before.Sessions))
	}
}

// TestUpgradeClosesIdleKeepAlive: a keep-alive connection idle in the
// old process when the upgrade happens, waiting or parked (idle for over
// a second: idlepark_test.go), gets its next request answered, with
// "Connection: close", and is then closed in order (EOF, no reset).
func TestUpgradeClosesIdleKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parked bool
	}{{"waiting", false}, {"parked", true}} {
		t.Run(tc.name, func(t *testing.T) { upgradeIdleKeepAlive(t, tc.parked) })
	}
}

func upgradeIdleKeepAlive(t *testing.T, parked bool) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	c := startBackend(t, "127.0.0.4", "c", echoHandler("c"))
	p := startLBD(t, upgradeConfig(a, b, c))
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	exchange := func() *http.Response {
		t.Helper()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(conn, "GET /ka HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := exchange(); r.StatusCode != 200 || r.Close {
		t.Fatalf("before: %d close=%v", r.StatusCode, r.Close)
	}
	if parked {
		waitParked(t, p, 1)
	}
	waitSocket(t, filepath.Join(p.dir, "ctl.sock"))
	pid := lbctlUpgrade(t, filepath.Join(p.dir, "ctl.sock"))
	if parked && parkedSockets(t, p.cmd.Process.Pid) != 1 {
		t.Fatal("the upgrade ended the parked connection")
	}
	r := exchange()
	// net/http reads "Connection: close" into Close (and drops the line).
	if r.StatusCode != 200 || !r.Close {
		t.Fatalf("after the upgrade: %d, close %v\n%s", r.StatusCode, r.Close, p.out.String())
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the last response: %d bytes, %v; want EOF", n, err)
	}
	waitGone(t, p.cmd.Process.Pid, 10*time.Second)
	if !pidAlive(pid) {
		t.Fatalf("the new lbd %d is gone", pid)
	}
	if resp, body := get(t, http.DefaultClient, "http://"+p.addr+"/new"); resp.StatusCode != 200 || !strings.Contains(body, "GET /new") {
		t.Fatalf("new process: %d %q", resp.StatusCode, body)
	}
}

// TestUpgradeFailureKeepsServing: a new binary that cannot start (here
// the configuration file broke meanwhile) fails the upgrade with its
// reason; the running lbd goes on serving, keeps its PID file and stops
// normally.
func TestUpgradeFailureKeepsServing(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	c := startBackend(t, "127.0.0.4", "c", echoHandler("c"))
	p := startLBD(t, upgradeConfig(a, b, c))
	good, err := os.ReadFile(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.cfg, append(good, "Bogus 1\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	waitSocket(t, filepath.Join(p.dir, "ctl.sock"))
	out, err := exec.Command(binary(t, "lbctl"), "-s", filepath.Join(p.dir, "ctl.sock"), "upgrade").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "upgrade failed") || !strings.Contains(string(out), "exited before it was ready") {
		t.Fatalf("lbctl upgrade: %v %q", err, out)
	}
	if resp, _ := get(t, http.DefaultClient, "http://"+p.addr+"/"); resp.StatusCode != 200 {
		t.Fatalf("after the failed upgrade: %d", resp.StatusCode)
	}
	if pid := readPID(t, filepath.Join(p.dir, "lbd.pid")); pid != p.cmd.Process.Pid {
		t.Fatalf("PID file says %d, lbd is %d", pid, p.cmd.Process.Pid)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(5 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
}

// TestUpgradeAsPound: lbd run as pound is upgraded into a pound again
// (the control API still reports Pound's version).
func TestUpgradeAsPound(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	c := startBackend(t, "127.0.0.4", "c", echoHandler("c"))
	dir := t.TempDir()
	pound := filepath.Join(dir, "pound")
	if err := os.Symlink(binary(t, "lbd"), pound); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cfg := strings.NewReplacer("{PORT}", strconv.Itoa(port), "{DIR}", dir).Replace(upgradeConfig(a, b, c))
	path := filepath.Join(dir, "pound.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := runBinary(t, pound, dir, path, fmt.Sprintf("127.0.0.1:%d", port))
	sock := filepath.Join(dir, "ctl.sock")
	waitSocket(t, sock)
	pid := lbctlUpgrade(t, sock)
	if pid == p.cmd.Process.Pid {
		t.Fatal("no new process")
	}
	_, body := control(t, unixClient(sock), "GET", "/core")
	if !strings.Contains(body, `"version": "4.23.90"`) && !strings.Contains(body, `"version":"4.23.90"`) {
		t.Fatalf("the new process does not run as pound: %s", body)
	}
	if !strings.Contains(body, fmt.Sprintf("%d", pid)) {
		t.Fatalf("GET /core did not reach the new process %d: %s", pid, body)
	}
}
