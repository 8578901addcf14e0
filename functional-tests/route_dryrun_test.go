package functionaltests

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRouteIsADryRun proves that explaining changes nothing: the whole
// state both control APIs show (counters, sessions with their expiry to
// the microsecond, backend states, the metrics) is identical before and
// after a series of explanations of every kind, and the things a dry
// run could have consumed are still there for real requests: the TBF
// tokens, the round-robin position, the sessions never created.
func TestRouteIsADryRun(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	svc := func(name, body string) string {
		return fmt.Sprintf("\tService %q\n\t\tURL \"^/%s/\"\n%s%s%s\tEnd\n", name, name, body, a.block(), b.block())
	}
	cfg := "Daemon 0\nLogLevel 0\nAlive 30\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" +
		svc("rr", "\t\tRoutingPolicy ROUND_ROBIN\n\t\tSession\n\t\t\tType COOKIE\n\t\t\tID \"sid\"\n\t\t\tTTL 300\n\t\tEnd\n") +
		svc("tbf", "\t\tTBF \"%[remoteip 0]\" 1/60s 2\n") +
		svc("lc", "\t\tRoutingPolicy LEAST_CONNECTIONS\n") +
		svc("ip", "\t\tSession\n\t\t\tType IP\n\t\t\tTTL 300\n\t\tEnd\n") +
		"End\n"
	zsock := filepath.Join(t.TempDir(), "z.sock")
	p := startLBD(t, cfg, "-C", zsock)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	waitSocket(t, zsock)
	// Real traffic first, so there are counters, latencies and sessions.
	who(t, p.addr, "/rr/x", "Cookie: sid=pinned")
	who(t, p.addr, "/lc/x")
	who(t, p.addr, "/ip/x")
	next := explainVia(t, sock, "GET", "/rr/x").Backend.Address
	time.Sleep(1100 * time.Millisecond) // a refreshed session would show a later expiry

	before := apiState(t, sock, zsock)
	queries := [][]string{
		{"GET", "/rr/x"}, {"-H", "Cookie: sid=pinned", "GET", "/rr/x"}, {"-H", "Cookie: sid=new1", "GET", "/rr/x"},
		{"GET", "/tbf/x"}, {"GET", "/tbf/x"}, {"GET", "/tbf/x"}, {"GET", "/tbf/x"},
		{"GET", "/lc/x"}, {"GET", "/ip/x"}, {"-a", "192.0.2.1", "GET", "/ip/x"}, {"-a", "2001:db8::1", "GET", "/ip/x"},
		{"GET", "/nothing"}, {"PUT", "/rr/x"}, {"GET", "http://h/rr/y?q=1"},
	}
	for range 3 {
		for _, q := range queries {
			routeJSON(t, sock, q...)
			routeJSON(t, zsock, q...)
		}
	}
	after := apiState(t, sock, zsock)
	for name := range before {
		if !reflect.DeepEqual(before[name], after[name]) {
			bj, _ := json.MarshalIndent(before[name], "", " ")
			aj, _ := json.MarshalIndent(after[name], "", " ")
			t.Errorf("%s changed by explaining:\n%s", name, lineDiff(string(bj), string(aj)))
		}
	}
	// Nothing was consumed: both TBF tokens are there, the round robin
	// goes where it was going, no session was made for new1.
	for i, want := range []int{200, 200, 503} {
		if status, _ := getBody(t, "http://"+p.addr+"/tbf/x"); status != want {
			t.Fatalf("real TBF request %d: %d, want %d (the dry runs took a token?)", i, status, want)
		}
	}
	if got := who(t, p.addr, "/rr/x"); got != map[string]string{a.addr: "a", b.addr: "b"}[next] {
		t.Fatalf("round robin went to %s, the explanation before the dry runs said %s", got, next)
	}
	if r := explainVia(t, sock, "-H", "Cookie: sid=new1", "GET", "/rr/x"); r.Session.Found {
		t.Fatalf("a dry run created session new1")
	}
}

// volatile matches what changes by itself between two readings: the
// clock, the uptime.
// volatile names what moves without any request changing state: the clock,
// and the worker pool's count of connections in flight (a reply reaches the
// client before its connection is counted out).
var volatile = regexp.MustCompile(`^(timestamp|uptime|workers)$`)

// trafficFamilies are the lbd_* families that requests, connections and
// health checks move without changing any state.
var trafficFamilies = regexp.MustCompile(`^lbd_(listener|service|backend)_(request_duration_seconds|responses|connect_duration_seconds|health_check|connections)|^lbd_(tbf|acl)_decisions`)

// trafficSample reports whether an exposition line is a sample of a
// trafficFamilies family (the # TYPE and # HELP lines stay compared).
func trafficSample(l string) bool { return trafficFamilies.MatchString(l) }

// apiState reads everything both control APIs show, without the clock
// (zsock "": there is no zproxy socket).
func apiState(t *testing.T, sock, zsock string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for name, get := range map[string]struct{ sock, path string }{
		"pound listing":    {sock, "/"},
		"zproxy services":  {zsock, "/listener/0/services"},
		"zproxy sessions":  {zsock, "/sessions"},
		"zproxy listeners": {zsock, "/listeners"},
	} {
		if get.sock == "" {
			continue
		}
		body := ctlGet(t, get.sock, get.path)
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, body)
		}
		out[name] = dropVolatile(v)
	}
	var metrics []string
	for _, l := range strings.Split(ctlGet(t, sock, "/metrics"), "\n") {
		if !strings.HasPrefix(l, "pound_uptime") && !strings.HasPrefix(l, "pound_workers{") && !trafficSample(l) {
			metrics = append(metrics, l)
		}
	}
	out["metrics"] = metrics
	return out
}

func dropVolatile(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if volatile.MatchString(k) {
				delete(x, k)
				continue
			}
			x[k] = dropVolatile(e)
		}
	case []any:
		for i := range x {
			x[i] = dropVolatile(x[i])
		}
	}
	return v
}

// ctlGet reads path from a control socket.
func ctlGet(t *testing.T, sock, path string) string {
	t.Helper()
	resp, err := ctlClient(sock).Get("http://lbd" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b.String())
	}
	return b.String()
}
