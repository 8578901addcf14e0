package functionaltests

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// routeIndexConfig is a listener of 300 services, enough for the routing
// index: a FallThrough service that rewrites the Host, Host services
// (exact, and one regex with an optional group), a regex service the index
// cannot file, literal-prefix URL services, and a catch-all. Each answers
// with a redirect naming it.
func routeIndexConfig(hostOf func(i int) string) string {
	var b strings.Builder
	b.WriteString("Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n")
	svc := func(name, conds string) {
		fmt.Fprintf(&b, "\tService %q\n%s\t\tRedirect \"http://%s.test\"\n\tEnd\n", name, conds, name)
	}
	b.WriteString("\tService \"ft\"\n\t\tURL \"^/ft/\"\n\t\tFallThrough\n\t\tSetHeader \"Host: " + hostOf(150) + "\"\n\t\tRedirect \"http://ft.test\"\n\tEnd\n")
	for i := range 200 {
		svc(fmt.Sprintf("h%d", i), fmt.Sprintf("\t\tHost %q\n", hostOf(i)))
	}
	svc("re", "\t\tURL \"^/re[0-9]+/\"\n")
	svc("tenant", "\t\tHeader \"X-Tenant\" -exact \"blue\"\n")
	svc("www", "\t\tHost -re \"^(www\\\\.)?shop\\\\.example$\"\n")
	for i := range 96 {
		svc(fmt.Sprintf("u%d", i), fmt.Sprintf("\t\tURL \"^/app%d/\"\n", i))
	}
	svc("any", "")
	b.WriteString("End\n")
	return b.String()
}

// routedTo sends GET path with Host host and returns the service that
// answered (the redirect's host).
func routedTo(t *testing.T, addr, host, path string, headers ...string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := strings.TrimSuffix(strings.TrimPrefix(resp.Header.Get("Location"), "http://"), ".test/")
	return strings.TrimSuffix(strings.SplitN(loc, ".test", 2)[0], "/")
}

// TestRouteIndexKeepsFirstMatch drives a configuration large enough for
// the routing index through the binary: first match wins as in order,
// a FallThrough rewrite is seen by the services after it, a service
// disabled at run time is passed over and comes back, a reload rebuilds
// the index, and lbctl route says which services the index skipped.
func TestRouteIndexKeepsFirstMatch(t *testing.T) {
	hostOf := func(i int) string { return fmt.Sprintf("site%d.example", i) }
	p := startLBD(t, routeIndexConfig(hostOf))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	cases := []struct {
		name, host, path, want string
		headers                []string
	}{
		{"host exact, any case", "SITE199.example", "/", "h199", nil},
		{"host beats a later URL service", "site7.example", "/app3/x", "h7", nil},
		{"URL prefix", "nowhere.example", "/app95/x", "u95", nil},
		{"URL prefix needs its slash", "nowhere.example", "/app95", "any", nil},
		{"regex service, not indexable", "nowhere.example", "/re12/x", "re", nil},
		{"regex with an optional group", "www.shop.example", "/", "www", nil},
		{"fall-through rewrites the Host for the services after it", "site3.example", "/ft/x", "h150", nil},
		{"host with a port is another host", "site3.example:80", "/", "any", nil},
		{"header value", "nowhere.example", "/", "tenant", []string{"X-Tenant: red", "X-Tenant: BLUE"}},
	}
	for _, tc := range cases {
		if got := routedTo(t, p.addr, tc.host, tc.path, tc.headers...); got != tc.want {
			t.Errorf("%s: %s %s went to %q, want %q", tc.name, tc.host, tc.path, got, tc.want)
		}
	}

	// Service 11 is h10 (ft is 0).
	if _, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "disable", "/1/11"); code != 0 {
		t.Fatalf("lbctl disable: %s", errOut)
	}
	if got := routedTo(t, p.addr, "site10.example", "/"); got != "any" {
		t.Fatalf("disabled h10: went to %q, want any", got)
	}
	if _, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "enable", "/1/11"); code != 0 {
		t.Fatalf("lbctl enable: %s", errOut)
	}
	if got := routedTo(t, p.addr, "site10.example", "/"); got != "h10" {
		t.Fatalf("re-enabled h10: went to %q", got)
	}

	r := explainVia(t, sock, "-H", "Host: site199.example", "GET", "/x")
	if r.Service == nil || r.Services[*r.Service].Name != "h199" {
		t.Fatalf("lbctl route chose %v, want h199: %s", r.Service, verdicts(r))
	}
	skipped := 0
	for _, s := range r.Services[:*r.Service] {
		switch {
		case s.Name == "re" && s.Verdict != "no match":
			t.Errorf("the regex service must be tried: %q", s.Verdict)
		case s.Verdict == "skipped" && strings.Contains(s.Skipped, "Host"):
			skipped++
		}
	}
	if skipped != 199 {
		t.Errorf("%d services skipped by the index before h199, want 199 (h0..h198): %s", skipped, verdicts(r))
	}

	// A reload with other hosts rebuilds the index.
	cfg := strings.ReplaceAll(routeIndexConfig(func(i int) string { return fmt.Sprintf("new%d.example", i) }), "{PORT}", portOf(p.addr))
	cfg = strings.ReplaceAll(cfg, "{DIR}", p.dir)
	if err := os.WriteFile(p.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "reload"); code != 0 {
		t.Fatalf("lbctl reload: %s", errOut)
	}
	if got := routedTo(t, p.addr, "new42.example", "/"); got != "h42" {
		t.Fatalf("after reload new42 went to %q, want h42", got)
	}
	if got := routedTo(t, p.addr, "site42.example", "/"); got != "any" {
		t.Fatalf("after reload site42 went to %q, want any", got)
	}
}
