package functionaltests

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The algorithms a RoutingPolicy names, driven through a config file and
// the real binary, in a Pound file (only the RoutingPolicy service changes)
// and in a zproxy file.

// balanceDialects are the two ways of writing the same listener: a Pound
// file, whose other service keeps Pound's semantics, and a zproxy file.
var balanceDialects = []struct {
	name, mark string
}{
	{name: "pound file", mark: ""},
	{name: "zproxy file", mark: zproxyMark},
}

// balanceConfig is a listener with a RoutingPolicy service on "/" and a
// plain service on "/down" whose only backend refuses connections.
func balanceConfig(mark, policy string, bs ...string) string {
	var b strings.Builder
	b.WriteString("Daemon 0\nLogLevel 0\nAlive 30\nTimeOut 5\nConnTO 3\nClient 10\nGrace 1\n")
	b.WriteString("ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" + mark)
	b.WriteString("\tService \"down\"\n\t\tURL \"^/down\"\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 1\n\t\tEnd\n\tEnd\n")
	b.WriteString("\tService \"balanced\"\n\t\tRoutingPolicy " + policy + "\n")
	for _, be := range bs {
		b.WriteString(be)
	}
	b.WriteString("\tEnd\nEnd\n")
	return b.String()
}

// backendOf asks for path and returns the X-Backend of the answer.
func backendOf(t *testing.T, c *http.Client, addr, path string) string {
	t.Helper()
	resp, _ := get(t, c, "http://"+addr+path)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	return resp.Header.Get("X-Backend")
}

// holdHandler answers /hold only when release is closed, after saying
// its name on holding; everything else at once.
type holdHandler struct {
	name    string
	holding chan<- string
	release <-chan struct{}
}

func (h *holdHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hold" {
		h.holding <- h.name
		<-h.release
	}
	w.Header().Set("X-Backend", h.name)
	fmt.Fprintln(w, h.name)
}

// TestLeastConnectionsCountsRequestsInFlight: while one backend holds a
// request, every other request goes to the other one (the held
// connection is load, idle pooled connections are not).
func TestLeastConnectionsCountsRequestsInFlight(t *testing.T) {
	for _, d := range balanceDialects {
		t.Run(d.name, func(t *testing.T) {
			holding, release := make(chan string, 2), make(chan struct{})
			ba := startBackend(t, "127.0.0.2", "a", &holdHandler{name: "a", holding: holding, release: release})
			bb := startBackend(t, "127.0.0.3", "b", &holdHandler{name: "b", holding: holding, release: release})
			p := startLBD(t, balanceConfig(d.mark, "LEAST_CONNECTIONS", ba.block(), bb.block()))
			c := &http.Client{Timeout: 10 * time.Second}
			// Warm both backends so each has an idle pooled connection.
			for i := 0; i < 4; i++ {
				backendOf(t, c, p.addr, "/warm")
			}
			heldBy := make(chan string, 1)
			go func() {
				resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + p.addr + "/hold")
				if err != nil {
					heldBy <- "error: " + err.Error()
					return
				}
				resp.Body.Close()
				heldBy <- resp.Header.Get("X-Backend")
			}()
			var busy string
			select {
			case busy = <-holding:
			case <-time.After(5 * time.Second):
				close(release)
				t.Fatal("no backend received the held request")
			}
			free := map[string]string{"a": "b", "b": "a"}[busy]
			for i := 0; i < 6; i++ {
				if got := backendOf(t, c, p.addr, "/next"); got != free {
					t.Errorf("request %d went to %s while %s held a request", i, got, busy)
				}
			}
			close(release)
			if got := <-heldBy; got != busy {
				t.Errorf("held request answered by %q, want %s", got, busy)
			}
			checkPoundServiceUnchanged(t, d.mark, p.addr)
		})
	}
}

// checkPoundServiceUnchanged: the service without RoutingPolicy answers a
// dead backend in the file's own dialect (Pound's page or zproxy's).
func checkPoundServiceUnchanged(t *testing.T, mark, addr string) {
	t.Helper()
	raw, _ := rawExchange(t, addr, []byte("GET /down HTTP/1.1\r\nHost: h\r\n\r\n"), 2*time.Second)
	want := "HTTP/1.1 503 Service Unavailable\r\n"
	if mark != "" {
		want = "HTTP/1.0 503 no backend\r\n"
	}
	if !strings.HasPrefix(string(raw), want) {
		t.Errorf("the other service answered %q, want it to start %q", firstLine(raw), want)
	}
}

func firstLine(raw []byte) string {
	s, _, _ := strings.Cut(string(raw), "\r\n")
	return s
}

// TestResponseTimeFollowsLatency: with one backend 200 ms slower, a
// RESPONSE_TIME service sends every request after the first samples to
// the fast one.
func TestResponseTimeFollowsLatency(t *testing.T) {
	for _, d := range balanceDialects {
		t.Run(d.name, func(t *testing.T) {
			slow := startBackend(t, "127.0.0.2", "slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(200 * time.Millisecond)
				w.Header().Set("X-Backend", "slow")
			}))
			fast := startBackend(t, "127.0.0.3", "fast", echoHandler("fast"))
			p := startLBD(t, balanceConfig(d.mark, "RESPONSE_TIME", slow.block(), fast.block()))
			c := &http.Client{Timeout: 5 * time.Second}
			seen := map[string]int{}
			for i := 0; i < 12; i++ {
				got := backendOf(t, c, p.addr, "/")
				if i >= 2 {
					seen[got]++
				}
			}
			if seen["fast"] != 10 {
				t.Errorf("last 10 requests: %v, want all on the fast backend", seen)
			}
		})
	}
}

// TestRoundRobinWeights: Weight 2 and Weight 1 share 12 requests 8/4.
func TestRoundRobinWeights(t *testing.T) {
	for _, d := range balanceDialects {
		t.Run(d.name, func(t *testing.T) {
			heavy := startBackend(t, "127.0.0.2", "heavy", echoHandler("heavy"))
			light := startBackend(t, "127.0.0.3", "light", echoHandler("light"))
			withWeight := func(b *backend, w int) string {
				return strings.Replace(b.block(), "\t\tEnd\n", fmt.Sprintf("\t\t\tWeight %d\n\t\tEnd\n", w), 1)
			}
			p := startLBD(t, balanceConfig(d.mark, "ROUND_ROBIN", withWeight(heavy, 2), withWeight(light, 1)))
			c := &http.Client{Timeout: 5 * time.Second}
			seen := map[string]int{}
			for i := 0; i < 12; i++ {
				seen[backendOf(t, c, p.addr, "/")]++
			}
			if seen["heavy"] != 8 || seen["light"] != 4 {
				t.Errorf("12 requests: %v, want heavy 8, light 4", seen)
			}
		})
	}
}

// stalledListener is a TCP socket whose accept queue is full and never
// drained: a connect to it stays in progress (SYNs are dropped) until
// the connector gives up.
func stalledListener(t *testing.T, host string) (port int) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	ip := net.ParseIP(host).To4()
	sa := &syscall.SockaddrInet4{Addr: [4]byte(ip)}
	if err := syscall.Bind(fd, sa); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	name, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port = name.(*syscall.SockaddrInet4).Port
	addr := net.JoinHostPort(host, fmt.Sprint(port))
	for i := 0; i < 8; i++ {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			return port // the queue is full: connects now hang
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("could not fill the accept queue of the stalled listener")
	return 0
}

// TestPendingConnectionsAvoidsAStalledConnect: while a connect to one
// backend is in progress, PENDING_CONNECTIONS sends the next requests to
// the other one; none waits for the stalled connect.
func TestPendingConnectionsAvoidsAStalledConnect(t *testing.T) {
	for _, d := range balanceDialects {
		t.Run(d.name, func(t *testing.T) {
			port := stalledListener(t, "127.0.0.2")
			stalled := fmt.Sprintf("\t\tBackEnd\n\t\t\tAddress 127.0.0.2\n\t\t\tPort %d\n\t\tEnd\n", port)
			ok := startBackend(t, "127.0.0.3", "ok", echoHandler("ok"))
			p := startLBD(t, balanceConfig(d.mark, "PENDING_CONNECTIONS", stalled, ok.block()))
			first := make(chan string, 1)
			go func() {
				resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + p.addr + "/first")
				if err != nil {
					first <- "error: " + err.Error()
					return
				}
				resp.Body.Close()
				first <- fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("X-Backend"))
			}()
			time.Sleep(300 * time.Millisecond) // the first request is connecting to the stalled backend
			c := &http.Client{Timeout: time.Second}
			for i := 0; i < 5; i++ {
				if got := backendOf(t, c, p.addr, "/next"); got != "ok" {
					t.Errorf("request %d went to %q", i, got)
				}
			}
			// ConnTO 3: the first request gives up on the stalled backend
			// and is served by the other one.
			if got := <-first; got != "200 ok" {
				t.Errorf("first request: %q, want it retried on ok", got)
			}
		})
	}
}

// TestEmergencyInBothDialects: with the only regular backend dead, the
// Emergency backend answers, in a zproxy file as in a Pound one.
func TestEmergencyInBothDialects(t *testing.T) {
	for _, d := range balanceDialects {
		t.Run(d.name, func(t *testing.T) {
			em := startBackend(t, "127.0.0.3", "emergency", echoHandler("emergency"))
			host, port, _ := net.SplitHostPort(em.addr)
			cfg := "Daemon 0\nLogLevel 0\nAlive 30\nTimeOut 5\nConnTO 1\nClient 10\nGrace 1\n" +
				"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" + d.mark +
				"\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 1\n\t\tEnd\n" +
				"\t\tEmergency\n\t\t\tAddress " + host + "\n\t\t\tPort " + port + "\n\t\tEnd\n\tEnd\nEnd\n"
			p := startLBD(t, cfg)
			c := &http.Client{Timeout: 5 * time.Second}
			for i := 0; i < 3; i++ {
				if got := backendOf(t, c, p.addr, "/"); got != "emergency" {
					t.Errorf("request %d: %q", i, got)
				}
			}
		})
	}
}

// TestBalancerGroups follows Pound's balancer groups: the backends of
// group 0 (Backend) take every request while one of them can; only then
// group 65535 (Emergency), whose backends are balanced among themselves
// too; and group 0 again as soon as one of its backends is back.
func TestBalancerGroups(t *testing.T) {
	var blocks string
	for i, name := range []string{"r1", "r2", "e1", "e2"} {
		be := startBackend(t, fmt.Sprintf("127.0.0.%d", i+2), name, echoHandler(name))
		host, port, _ := net.SplitHostPort(be.addr)
		kind := "Backend"
		if name[0] == 'e' {
			kind = "Emergency"
		}
		blocks += "\t\t" + kind + "\n\t\t\tAddress " + host + "\n\t\t\tPort " + port + "\n\t\tEnd\n"
	}
	p := startLBD(t, "Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\n"+
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n"+blocks+"\tEnd\nEnd\n")
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	c := &http.Client{Timeout: 5 * time.Second}
	steps := []struct {
		name    string
		toggle  []string // lbctl command and path
		allowed string   // the backends that answer, each at least once
	}{
		{name: "group 0 serves", allowed: "r1 r2"},
		{name: "one left in group 0", toggle: []string{"disable", "/1/0/0"}, allowed: "r2"},
		{name: "group 0 exhausted: group 65535, balanced", toggle: []string{"disable", "/1/0/1"}, allowed: "e1 e2"},
		{name: "group 0 back", toggle: []string{"enable", "/1/0/0"}, allowed: "r1"},
	}
	for _, st := range steps {
		if st.toggle != nil {
			if _, errOut, code := lbctlRun(t, "lbctl", nil, append([]string{"-s", sock}, st.toggle...)...); code != 0 {
				t.Fatalf("%s: lbctl %v: exit %d %s", st.name, st.toggle, code, errOut)
			}
		}
		seen := map[string]int{}
		for i := 0; i < 40; i++ {
			seen[backendOf(t, c, p.addr, "/")]++
		}
		for name := range seen {
			if !strings.Contains(st.allowed, name) {
				t.Errorf("%s: %s answered (%v)", st.name, name, seen)
			}
		}
		for _, name := range strings.Fields(st.allowed) {
			if seen[name] == 0 {
				t.Errorf("%s: %s never answered (%v)", st.name, name, seen)
			}
		}
	}
	out, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "-j", "list", "/1/0")
	if code != 0 {
		t.Fatalf("lbctl list /1/0: exit %d %s", code, errOut)
	}
	if strings.Count(out, `"weight":65535`) != 2 || strings.Count(out, `"weight":0`) != 2 {
		t.Errorf("group weights (0 for Backend, 65535 for Emergency) not listed:\n%s", out)
	}
}
