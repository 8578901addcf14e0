package functionaltests

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Backends re-weighted and removed at runtime (lbd extensions of both
// control APIs), through the real binary, lbctl and real traffic.

// editConfig is one balanced service "web" (Balancer, or RoutingPolicy
// in a zproxy file) with HEADER sessions, a Pound control socket.
func editConfig(mark, balancing string, bes ...*backend) string {
	var b strings.Builder
	b.WriteString("Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 5\nClient 5\nGrace 2\nControl \"{DIR}/ctl.sock\"\n")
	b.WriteString("ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" + mark + "\tService \"web\"\n\t\t" + balancing + "\n")
	for _, be := range bes {
		b.WriteString(be.block())
	}
	b.WriteString("\t\tSession\n\t\t\tType HEADER\n\t\t\tID \"X-Sess\"\n\t\t\tTTL 300\n\t\tEnd\n\tEnd\nEnd\n")
	return b.String()
}

// split sends n requests without a session key and counts who answered.
func split(t *testing.T, addr string, n int) map[string]int {
	t.Helper()
	return whoAnswered(t, addr, n, "")
}

// lbctlOK runs lbctl on sock and fails the test on a non-zero exit.
func lbctlOK(t *testing.T, sock string, args ...string) string {
	t.Helper()
	out, errOut, code := lbctlRun(t, "lbctl", nil, append([]string{"-s", sock}, args...)...)
	if code != 0 {
		t.Fatalf("lbctl %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// zid is a backend's zproxy id.
func zid(b *backend) string { return strings.Replace(b.addr, ":", "-", 1) }

// TestWeightChangesTheSplit: iwrr lays its cycle out from the weights,
// so every window of whole cycles has exact counts, and each change
// shows in the very next requests: lbctl on the Pound socket, the Pound
// API, a refused value that changes nothing, and a reload that brings
// the file's weights back.
func TestWeightChangesTheSplit(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	p := startLBD(t, editConfig("", "Balancer iwrr", a, b))
	ctl := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, ctl)
	want := func(step string, n, na, nb int) {
		t.Helper()
		if got := split(t, p.addr, n); got["a"] != na || got["b"] != nb {
			t.Fatalf("%s: %d requests went %v, want a=%d b=%d", step, n, got, na, nb)
		}
	}
	want("Pound's default Priority 5 for both", 40, 20, 20)

	out := lbctlOK(t, ctl, "weight", "/1/0/1", "15")
	if !strings.Contains(out, "/1/0/1") || !strings.Contains(out, " 15 ") {
		t.Errorf("lbctl weight printed:\n%s", out)
	}
	want("lbctl weight 15 on b", 40, 10, 30)

	code, body := unixDo(t, ctl, http.MethodPatch, "/listener/1/0/0?priority=0", "")
	if code != http.StatusOK || !strings.Contains(body, `"priority":0`) {
		t.Fatalf("Pound PATCH: %d %s", code, body)
	}
	want("Pound API priority 0 on a", 20, 0, 20)

	_, errOut, code := lbctlRun(t, "lbctl", nil, "-s", ctl, "weight", "/1/0/0", "70000")
	if code != 1 || !strings.Contains(errOut, "weight 70000 out of range 0-65535") {
		t.Fatalf("an out-of-range weight: exit %d, %q", code, errOut)
	}
	want("after the refused value", 20, 0, 20)

	lbctlOK(t, ctl, "reload")
	want("the file's weights after a reload", 40, 20, 20)
}

// TestZproxyWeightAndTier: in a zproxy file (lbd -C) the weight is
// zproxy's Weight (round robin: runs of it) and the priority a tier of
// 1-9, through the zproxy API and lbctl on the zproxy socket.
func TestZproxyWeightAndTier(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	dir := t.TempDir()
	zsock := filepath.Join(dir, "z.sock")
	p := startLBD(t, editConfig(zproxyMark, "RoutingPolicy ROUND_ROBIN", a, b), "-C", zsock)
	waitSocket(t, zsock)
	// zproxy's monitor checks the backends before they serve.
	eventually(t, p.addr, onlyFrom("a", "b"))
	if got := split(t, p.addr, 40); got["a"] != 20 || got["b"] != 20 {
		t.Fatalf("weights 1 and 1: %v", got)
	}
	code, body := unixDo(t, zsock, http.MethodPatch, "/listener/0/service/web/backend/"+zid(b), `{"weight":3}`)
	if code != http.StatusOK || body != `{"result":"ok"}` {
		t.Fatalf("zproxy PATCH: %d %s", code, body)
	}
	if _, body = unixDo(t, zsock, http.MethodGet, "/listener/0/service/web/backend/"+zid(b), ""); !strings.Contains(body, `"weight": 3`) {
		t.Errorf("zproxy GET after the PATCH: %s", body)
	}
	if got := split(t, p.addr, 40); got["a"] != 10 || got["b"] != 30 {
		t.Fatalf("weight 3 on b: %v, want a=10 b=30", got)
	}
	lbctlOK(t, zsock, "backend", "weight", "/0/0/"+zid(a), "3")
	if got := split(t, p.addr, 36); got["a"] != 18 || got["b"] != 18 { // cycles of AAABBB
		t.Fatalf("lbctl weight 3 on a too: %v", got)
	}
	lbctlOK(t, zsock, "priority", "/0/0/1", "2") // b into tier 2: a alone serves
	if got := split(t, p.addr, 20); got["a"] != 20 {
		t.Fatalf("b in tier 2: %v, want all on a", got)
	}
	_, errOut, code := lbctlRun(t, "lbctl", nil, "-s", zsock, "priority", "/0/0/1", "10")
	if code != 1 || !strings.Contains(errOut, "priority 10 out of range 1-9") {
		t.Fatalf("tier 10: exit %d, %q", code, errOut)
	}
}

// trackedBackend is startBackend with a count of the connections open
// on the backend's side, and a /hold path that answers once released.
func trackedBackend(t *testing.T, host, name string, release <-chan struct{}, holding chan<- struct{}) (*backend, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	open := &atomic.Int64{}
	echo := echoHandler(name)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			holding <- struct{}{}
			<-release
		}
		echo.ServeHTTP(w, r)
	})
	b := &backend{name: name, ln: ln, addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port}
	b.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ConnState: func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}}
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.srv.Close() })
	return b, open
}

// via asks with a session key and returns who answered.
func viaKey(t *testing.T, c *http.Client, addr, path, key string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.Header.Set("X-Sess", key)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s (%s): %d", path, key, resp.StatusCode)
	}
	return resp.Header.Get("X-Backend")
}

// TestRemoveBackend removes a backend under traffic, once through each
// socket: a request in flight to it finishes, it gets no request after,
// the sessions pinned to it go elsewhere, the connections lbd kept to it
// close (and lbd's descriptors come back to what the other backends'
// pools account for), and neither API lists it any more.
func TestRemoveBackend(t *testing.T) {
	for _, how := range []string{"lbctl on the Pound socket", "zproxy API", "lbctl on the zproxy socket"} {
		t.Run(how, func(t *testing.T) {
			release, holding := make(chan struct{}), make(chan struct{}, 1)
			a, openA := trackedBackend(t, "127.0.0.2", "a", release, holding)
			b, openB := trackedBackend(t, "127.0.0.3", "b", release, holding)
			c, openC := trackedBackend(t, "127.0.0.4", "c", release, holding)
			// The Pound case runs a Pound file; -C makes it a zproxy one.
			var args []string
			zsock := filepath.Join(t.TempDir(), "z.sock")
			zproxy := how != "lbctl on the Pound socket"
			if zproxy {
				args = []string{"-C", zsock}
			}
			p := startLBD(t, editConfig("", "Balancer iwrr", a, b, c), args...)
			ctl := filepath.Join(p.dir, "ctl.sock")
			waitSocket(t, ctl)
			if zproxy {
				waitSocket(t, zsock)
				eventually(t, p.addr, onlyFrom("a", "b", "c")) // zproxy's monitor checks them first
			}
			client := &http.Client{Timeout: 10 * time.Second}
			// Sessions on every backend, and pooled connections to each.
			onB := pinOn(t, client, p.addr, "b")
			if openB.Load() == 0 {
				t.Fatal("no connection open to b")
			}
			baseFDs, baseThreads := procStats(t, p.cmd.Process.Pid)

			held := holdRequest(p.addr, onB)
			<-holding
			removeThrough(t, how, ctl, zsock, b)

			if _, body := unixDo(t, ctl, http.MethodGet, "/listener/1/0", ""); strings.Contains(body, `"key":"`+onB+`"`) {
				t.Errorf("the session pinned to b is still listed: %s", body)
			}
			for i := range 30 {
				if got := viaKey(t, client, p.addr, "/after", fmt.Sprintf("new%d", i)); got == "b" {
					t.Fatalf("request %d went to the removed backend", i)
				}
			}
			if got := viaKey(t, client, p.addr, "/after", onB); got == "b" || got == "" {
				t.Fatalf("the session pinned to b went to %q", got)
			}
			close(release)
			if got := <-held; got != "200 b" {
				t.Fatalf("the request in flight to b ended %q, want 200 from b", got)
			}
			waitFor(t, "lbd to close its connections to b", func() bool { return openB.Load() == 0 })
			checkLBDLeaks(t, p, baseFDs, baseThreads, 3, func() int { return int(openA.Load() + openB.Load() + openC.Load()) })

			checkRemovedListings(t, ctl, a, b, c)
			if zproxy {
				if _, body := unixDo(t, zsock, http.MethodGet, "/listener/0/service/web/backends", ""); strings.Contains(body, zid(b)) {
					t.Errorf("the zproxy API lists b: %s", body)
				}
			}
		})
	}
}

// pinOn pins six session keys through lbd at addr and returns one that
// landed on backend name.
func pinOn(t *testing.T, client *http.Client, addr, name string) string {
	t.Helper()
	pins := map[string]string{}
	for i := range 6 {
		key := fmt.Sprintf("k%d", i)
		pins[key] = viaKey(t, client, addr, "/pin", key)
	}
	for k, be := range pins {
		if be == name {
			return k
		}
	}
	t.Fatalf("no session on %s: %v", name, pins)
	return ""
}

// holdRequest sends a /hold request with session key through lbd at addr;
// the channel gets "status backend" (or the error) when it ends.
func holdRequest(addr, key string) <-chan string {
	held := make(chan string, 1)
	go func() {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/hold", nil)
		if err != nil {
			held <- "error: " + err.Error()
			return
		}
		req.Header.Set("X-Sess", key)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			held <- "error: " + err.Error()
			return
		}
		resp.Body.Close()
		held <- fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("X-Backend"))
	}()
	return held
}

// removeThrough removes backend b (/1/0/1, web's second) the way how
// names: lbctl on the Pound socket ctl, the zproxy API on zsock, or
// lbctl on zsock.
func removeThrough(t *testing.T, how, ctl, zsock string, b *backend) {
	t.Helper()
	switch how {
	case "lbctl on the Pound socket":
		if out := lbctlOK(t, ctl, "backend", "rm", "/1/0/1"); strings.Contains(out, b.addr) {
			t.Errorf("the service printed after the removal lists b:\n%s", out)
		}
	case "zproxy API":
		if code, body := unixDo(t, zsock, http.MethodDelete, "/listener/0/service/web/backend/"+zid(b), ""); code != http.StatusOK {
			t.Fatalf("zproxy DELETE: %d %s", code, body)
		}
	default:
		lbctlOK(t, zsock, "-q", "backend", "remove", "/0/web/"+zid(b))
	}
}

// checkRemovedListings checks that the Pound API on ctl lists a and c,
// not b.
func checkRemovedListings(t *testing.T, ctl string, a, b, c *backend) {
	t.Helper()
	_, body := unixDo(t, ctl, http.MethodGet, "/listener/1/0", "")
	var svc struct{ Backends []struct{ Address string } }
	if err := json.Unmarshal([]byte(body), &svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.Backends) != 2 || svc.Backends[0].Address != a.addr || svc.Backends[1].Address != c.addr {
		t.Errorf("the Pound API lists %+v, want a and c without b (%s)", svc.Backends, b.addr)
	}
}

// TestRemoveBackendRefusals: what cannot be removed is refused with the
// reason, and nothing changes.
func TestRemoveBackendRefusals(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	p := startLBD(t, "Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n"+
		"\tService \"r\"\n\t\tURL \"^/r\"\n\t\tRedirect \"http://example.com/\"\n\tEnd\n"+
		"\tService \"twice\"\n"+a.block()+a.block()+"\tEnd\nEnd\n")
	ctl := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, ctl)
	for _, tc := range []struct{ path, errHas string }{
		{"/1/0/0", "backend 0 is a redirect backend"},
		{"/1/1/0", "its address is listed more than once in the service"},
		{"/1/1/5", "backend 5 not found in service 1 of listener 1"},
	} {
		_, errOut, code := lbctlRun(t, "lbctl", nil, "-s", ctl, "backend", "rm", tc.path)
		if code != 1 || !strings.Contains(errOut, tc.errHas) {
			t.Errorf("rm %s: exit %d, %q, want %q", tc.path, code, errOut, tc.errHas)
		}
	}
	if got := split(t, p.addr, 4); got["a"] != 4 {
		t.Errorf("after the refusals: %v", got)
	}
}
