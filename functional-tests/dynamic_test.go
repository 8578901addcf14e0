package functionaltests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lbd/internal/dnstest"
)

// samePort starts an echo backend on each host, all on one port, as the
// addresses of one DNS name share the matrix's Port. A few tries, since
// the port may be taken on one of the hosts.
func samePort(t *testing.T, hosts, names []string) ([]*backend, int) {
	t.Helper()
	for range 20 {
		first := startBackend(t, hosts[0], names[0], echoHandler(names[0]))
		bs := []*backend{first}
		for i := 1; i < len(hosts); i++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", hosts[i], first.port))
			if err != nil {
				break
			}
			b := &backend{name: names[i], ln: ln, addr: ln.Addr().String(), port: first.port}
			b.srv = &http.Server{Handler: echoHandler(names[i]), ReadHeaderTimeout: 5 * time.Second}
			go b.srv.Serve(ln)
			t.Cleanup(func() { b.srv.Close() })
			bs = append(bs, b)
		}
		if len(bs) == len(hosts) {
			return bs, first.port
		}
		for _, b := range bs {
			b.stop()
		}
	}
	t.Fatal("no port free on every host")
	return nil, 0
}

// dynConfig is a listener with one service around backend, lbd's
// resolver pointed at the test DNS server.
func dynConfig(dns *dnstest.Server, backend string) string {
	return `Control "{DIR}/ctl.sock"
Resolver
	ConfigText
		nameserver ` + dns.Addr + `
		options timeout:1 attempts:1
	End
	RetryInterval 1
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Balancer iwrr
` + backend + `
	End
End
`
}

// ctlBackends returns the backends of listener 1, service 0 as the
// control API lists them.
func ctlBackends(t *testing.T, p *proc) []map[string]any {
	t.Helper()
	resp, err := ctlClient(filepath.Join(p.dir, "ctl.sock")).Get("http://lbd/listener/1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var svc struct{ Backends []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&svc); err != nil {
		t.Fatal(err)
	}
	return svc.Backends
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// status is the answer to one request.
func status(t *testing.T, addr string) int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func onlyFrom(names ...string) func(map[string]int) bool {
	return func(seen map[string]int) bool {
		if len(seen) != len(names) {
			return false
		}
		for _, n := range names {
			if seen[n] == 0 {
				return false
			}
		}
		return true
	}
}

// A Resolve all backend follows its A records: it grows and shrinks with
// them, keeps its backends while the server does not answer, and loses
// them when the name is gone.
func TestDynamicARecords(t *testing.T) {
	dns := dnstest.Start(t)
	_, port := samePort(t, []string{"127.0.0.2", "127.0.0.3"}, []string{"two", "three"})
	zone := func(ips ...string) string {
		z := "$ORIGIN example.org.\n"
		for _, ip := range ips {
			z += "be 1 A " + ip + "\n"
		}
		return z
	}
	dns.MustSetZone(t, zone("127.0.0.2"))
	p := startLBD(t, dynConfig(dns, fmt.Sprintf(`		Backend
			Address "be.example.org"
			Port %d
			Resolve all
			Family inet
		End`, port)))

	eventually(t, p.addr, onlyFrom("two"))
	bes := ctlBackends(t, p)
	if len(bes) != 2 || bes[0]["type"] != "matrix" || bes[0]["hostname"] != "be.example.org" ||
		bes[0]["resolve_mode"] != "all" || bes[0]["family"] != 2.0 || bes[1]["parent"] != 0.0 {
		t.Errorf("control API lists %v", bes)
	}

	dns.MustSetZone(t, zone("127.0.0.2", "127.0.0.3"))
	eventually(t, p.addr, onlyFrom("two", "three"))

	dns.MustSetZone(t, zone("127.0.0.3"))
	eventually(t, p.addr, onlyFrom("three"))

	dns.SetSilent(true) // a lookup that times out keeps what there was
	n := dns.Queries()
	waitFor(t, "two more lookups", func() bool { return dns.Queries() >= n+2 })
	if seen := whoAnswered(t, p.addr, 4, ""); seen["three"] != 4 {
		t.Errorf("while the DNS is silent traffic went to %v", seen)
	}

	dns.MustSetZone(t, "$ORIGIN example.org.\nother 1 A 127.0.0.2\n")
	dns.SetSilent(false) // NXDOMAIN: the backends go
	waitFor(t, "the 503 of an empty matrix", func() bool { return status(t, p.addr) == http.StatusServiceUnavailable })
	if bes := ctlBackends(t, p); len(bes) != 1 {
		t.Errorf("after NXDOMAIN the control API lists %v", bes)
	}
}

// A Resolve srv backend makes one backend per target address, its
// priority from the SRV weight, its balancer group from the SRV
// priority: the lower group takes all traffic while it is up.
func TestDynamicSRV(t *testing.T) {
	dns := dnstest.Start(t)
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	c := startBackend(t, "127.0.0.4", "c", echoHandler("c"))
	dns.MustSetZone(t, fmt.Sprintf(`$ORIGIN example.org.
a 60 A 127.0.0.2
b 60 A 127.0.0.3
c 60 A 127.0.0.4
$ORIGIN _tcp.example.org.
_web 1 SRV 10 30 %d a.example.org.
_web 1 SRV 10 10 %d b.example.org.
_web 1 SRV 20 0 %d c.example.org.
`, a.port, b.port, c.port))
	p := startLBD(t, dynConfig(dns, `		Backend
			Address "_web._tcp.example.org"
			Resolve srv
		End`))

	eventually(t, p.addr, onlyFrom("a", "b"))
	want := map[string][2]float64{a.addr: {10, 30}, b.addr: {10, 10}, c.addr: {20, 1}} // weight (group), priority
	waitFor(t, "three backends in the control API", func() bool { return len(ctlBackends(t, p)) == 4 })
	for _, be := range ctlBackends(t, p)[1:] {
		w, ok := want[be["address"].(string)]
		if !ok || be["weight"] != w[0] || be["priority"] != w[1] || be["parent"] != 0.0 {
			t.Errorf("backend %v, want group/priority %v", be, w)
		}
	}
	// iwrr with priorities 30 and 10 over one cycle of 40 requests.
	if seen := whoAnswered(t, p.addr, 40, ""); seen["a"] != 30 || seen["b"] != 10 {
		t.Errorf("SRV weights 30:10 gave %v", seen)
	}

	a.stop()
	b.stop() // group 10 down: group 20 takes over
	waitFor(t, "group 20", func() bool { return whoAnswered(t, p.addr, 1, "")["c"] == 1 })

	// The record of b goes away: its backend with it.
	dns.MustSetZone(t, fmt.Sprintf("$ORIGIN example.org.\nc 60 A 127.0.0.4\n$ORIGIN _tcp.example.org.\n_web 1 SRV 20 0 %d c.example.org.\n", c.port))
	waitFor(t, "the SRV set to shrink", func() bool { return len(ctlBackends(t, p)) == 2 })
}

// A static backend whose name does not resolve is a warning: lbd starts,
// the backend is dead, the other backend serves.
func TestUnresolvedStaticBackend(t *testing.T) {
	ok := startBackend(t, "127.0.0.2", "ok", echoHandler("ok"))
	cfg := fmt.Sprintf(`Control "{DIR}/ctl.sock"
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		Backend
			Address "app.lbd-test.invalid"
		End
		Backend
			Address 127.0.0.2
			Port %d
		End
	End
End
`, ok.port)
	p := startLBD(t, cfg)
	if seen := whoAnswered(t, p.addr, 6, ""); seen["ok"] != 6 {
		t.Errorf("traffic went to %v", seen)
	}
	bes := ctlBackends(t, p)
	if len(bes) != 2 || bes[0]["alive"] != false || bes[1]["alive"] != true {
		t.Errorf("control API lists %v", bes)
	}
	out := p.out.String()
	for _, w := range []string{"warning: cannot resolve host name app.lbd-test.invalid", "dead (host name does not resolve)"} {
		if !strings.Contains(out, w) {
			t.Errorf("log lacks %q:\n%s", w, out)
		}
	}
}
