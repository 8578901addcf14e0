package functionaltests

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricsConfig has a control socket, a Metrics service and one web
// service with the backend block %s.
const metricsConfig = "Daemon 0\nLogLevel 0\nAlive 1\nControl \"{DIR}/ctl.sock\"\n" +
	"ListenHTTP \"main\"\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 1\n" +
	"\tService \"metrics\"\n\t\tURL \"^/metrics$\"\n\t\tMetrics\n\tEnd\n" +
	"\tService \"web\"\n%s\tEnd\nEnd\n"

// TestMetricsLbdFamilies sends N requests, scrapes over the control
// socket (lbctl metrics), sends N more and scrapes the Metrics service:
// no counter may go down between the scrapes, every request shows in the
// duration histograms of its listener, service and backend, and both
// scrapes pass promtool (the lbd_* families cleanly, Pound's with only the
// quirks Pound 4 has).
func TestMetricsLbdFamilies(t *testing.T) {
	promtool := needPromtool(t)
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	p := startLBD(t, fmt.Sprintf(metricsConfig, be.block()))
	sock := filepath.Join(p.dir, "ctl.sock")
	const n = 25
	send := func() {
		for i := 0; i < n; i++ {
			if resp, _ := get(t, http.DefaultClient, "http://"+p.addr+"/traffic"); resp.StatusCode != 200 {
				t.Fatalf("request %d: status %d", i, resp.StatusCode)
			}
		}
	}
	send()
	first := lbctlOK(t, sock, "metrics")
	send()
	// The scrape over HTTP is recorded once answered, so it is not in
	// its own counts.
	_, second := get(t, http.DefaultClient, "http://"+p.addr+"/metrics")

	a, b := parseScrape(t, first), parseScrape(t, second)
	checkGrows(t, a, b)
	web := `listener="1",listener_name="main",service="1",service_name="web"`
	tests := []struct {
		name, sample string
		first, then  float64
	}{
		{name: "listener duration count", sample: `lbd_listener_request_duration_seconds_count{listener="1",listener_name="main"}`, first: n, then: 2 * n},
		{name: "listener 2xx", sample: `lbd_listener_responses_total{listener="1",listener_name="main",code="2xx"}`, first: n, then: 2 * n},
		{name: "service duration count", sample: `lbd_service_request_duration_seconds_count{` + web + `}`, first: n, then: 2 * n},
		{name: "service +Inf bucket", sample: `lbd_service_request_duration_seconds_bucket{` + web + `,le="+Inf"}`, first: n, then: 2 * n},
		{name: "backend duration count", sample: `lbd_backend_request_duration_seconds_count{` + web + `,backend="0"}`, first: n, then: 2 * n},
		{name: "backend 2xx", sample: `lbd_backend_responses_total{` + web + `,backend="0",code="2xx"}`, first: n, then: 2 * n},
		{name: "backend up", sample: `lbd_backend_state{` + web + `,backend="0",state="up"}`, first: 1, then: 1},
		{name: "backend not down", sample: `lbd_backend_state{` + web + `,backend="0",state="down"}`, first: 0, then: 0},
		{name: "service up", sample: `lbd_service_state{` + web + `,state="up"}`, first: 1, then: 1},
		{name: "pound requests unchanged", sample: `pound_backend_requests_total{` + web + `,backend="0"}`, first: n, then: 2 * n},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := a[tc.sample]; !ok || got != tc.first {
				t.Errorf("first scrape: %s = %v (present %v), want %v", tc.sample, got, ok, tc.first)
			}
			if got, ok := b[tc.sample]; !ok || got != tc.then {
				t.Errorf("second scrape: %s = %v (present %v), want %v", tc.sample, got, ok, tc.then)
			}
		})
	}
	if !regexp.MustCompile(`(?m)^lbd_build_info\{version="[^"]+",goversion="go[^"]+"\} 1$`).MatchString(second) {
		t.Errorf("no lbd_build_info sample:\n%s", second)
	}
	for _, scrape := range []string{first, second} {
		checkPromtool(t, promtool, scrape)
	}
}

// checkPromtool runs promtool check metrics on a scrape: the lbd_*
// families must pass cleanly, Pound's with only Pound 4's quirks.
func checkPromtool(t *testing.T, promtool, scrape string) {
	t.Helper()
	lbd, pound := splitFamilies(t, scrape)
	if out, err := runPromtool(promtool, lbd); err != nil || out != "" {
		t.Errorf("promtool check metrics on lbd_*: %v\n%s\ninput:\n%s", err, out, lbd)
	}
	out, _ := runPromtool(promtool, pound) // it fails on Pound's quirks; they are checked here
	checkPoundQuirks(t, out)
}

// needPromtool returns promtool's path; without it the test fails and
// says what to install (CI installs it: .ci/run).
func needPromtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (%v): install it, e.g. apt-get install prometheus", err)
	}
	return path
}

// runPromtool runs `promtool check metrics` on text and returns what it said.
func runPromtool(promtool, text string) (string, error) {
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// poundQuirks are the only complaints promtool may have about Pound's
// families: Pound 4 exports counters without _total (pound_uptime,
// pound_queue_len), and lbd matches it (man lbd.cfg, METRICS).
var poundQuirks = []*regexp.Regexp{
	regexp.MustCompile(`^pound_(uptime|queue_len) counter metrics should have "_total" suffix$`),
}

func checkPoundQuirks(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		known := false
		for _, re := range poundQuirks {
			known = known || re.MatchString(line)
		}
		if !known {
			t.Errorf("promtool on pound_*: unexpected complaint %q", line)
		}
	}
}

// splitFamilies turns an OpenMetrics scrape into the Prometheus text
// format promtool 2.x reads, as Prometheus does on ingestion: a counter's
// TYPE and HELP name its _total samples, stateset and info become gauges,
// UNIT and EOF lines go. It returns the lbd_* and the pound_* families.
func splitFamilies(t *testing.T, om string) (lbd, pound string) {
	t.Helper()
	var lb, pb strings.Builder
	var fam, typ string
	var meta []string
	flush := func(first string) *strings.Builder {
		w := &pb
		if strings.HasPrefix(fam, "lbd_") {
			w = &lb
		}
		name := fam
		if typ == "counter" && strings.HasPrefix(first, fam+"_total") {
			name = fam + "_total"
		}
		for _, m := range meta {
			f := strings.SplitN(m, " ", 4)
			f[2] = name
			if f[1] == "TYPE" && (f[3] == "stateset" || f[3] == "info") {
				f[3] = "gauge"
			}
			w.WriteString(strings.Join(f, " ") + "\n")
		}
		meta = nil
		return w
	}
	var cur *strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(om, "\n"), "\n") {
		f := strings.SplitN(line, " ", 4)
		switch {
		case line == "# EOF" || strings.HasPrefix(line, "# UNIT "):
		case strings.HasPrefix(line, "# TYPE ") && len(f) == 4:
			fam, typ, cur = f[2], f[3], nil
			meta = append(meta, line)
		case strings.HasPrefix(line, "# HELP "):
			meta = append(meta, line)
		default:
			if cur == nil {
				cur = flush(line)
			}
			cur.WriteString(line + "\n")
		}
	}
	return lb.String(), pb.String()
}

// parseScrape maps every sample (name and labels as written) to its value.
func parseScrape(t *testing.T, om string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for _, line := range strings.Split(om, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("bad sample line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// checkGrows verifies that no counter, bucket, count or sum went down.
func checkGrows(t *testing.T, a, b map[string]float64) {
	t.Helper()
	counter := regexp.MustCompile(`^[a-z_]+(_total|_bucket|_count|_sum)\{`)
	seen := 0
	for k, v := range a {
		if !counter.MatchString(k) || strings.HasPrefix(k, "pound_") && !strings.HasSuffix(strings.SplitN(k, "{", 2)[0], "_total") {
			continue // Pound's gauges-named-counters are not monotonic
		}
		w, ok := b[k]
		if !ok {
			t.Errorf("%s disappeared", k)
			continue
		}
		if w < v {
			t.Errorf("%s went down: %v then %v", k, v, w)
		}
		seen++
	}
	if seen == 0 {
		t.Error("no counters in the scrape")
	}
}

// TestMetricsReloadsAndSessions scrapes GET /metrics on the control
// socket: a good and a broken reload are counted by result, the request
// counters survive the good one, and an IP session is counted when made
// and when it expires (TTL 1 s, swept every second).
func TestMetricsReloadsAndSessions(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	cfg := fmt.Sprintf(metricsConfig, be.block()+"\t\tSession\n\t\t\tType IP\n\t\t\tTTL 1\n\t\tEnd\n")
	p := startLBD(t, cfg)
	ctl := unixClient(filepath.Join(p.dir, "ctl.sock"))
	scrape := func() map[string]float64 {
		code, body := control(t, ctl, "GET", "/metrics")
		if code != 200 {
			t.Fatalf("GET /metrics on the control socket: %d %s", code, body)
		}
		return parseScrape(t, body)
	}
	const n = 5
	for i := 0; i < n; i++ {
		get(t, http.DefaultClient, "http://"+p.addr+"/traffic")
	}
	if code, body := control(t, ctl, "PATCH", "/config"); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	writeFile(t, p.dir, "lbd.cfg", cfg+"NoSuchDirective 1\n")
	if code, _ := control(t, ctl, "PATCH", "/config"); code != 400 {
		t.Fatalf("broken reload answered %d, want 400", code)
	}
	web := `listener="1",listener_name="main",service="1",service_name="web"`
	m := scrape()
	tests := []struct {
		name, sample string
		want         float64
	}{
		{name: "good reload", sample: `lbd_reloads_total{result="success"}`, want: 1},
		{name: "broken reload", sample: `lbd_reloads_total{result="failure"}`, want: 1},
		{name: "service count survives the reload", sample: `lbd_service_request_duration_seconds_count{` + web + `}`, want: n},
		{name: "listener count survives the reload", sample: `lbd_listener_request_duration_seconds_count{listener="1",listener_name="main"}`, want: n},
		{name: "one session made", sample: `lbd_service_sessions_created_total{` + web + `}`, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := m[tc.sample]; !ok || got != tc.want {
				t.Errorf("%s = %v (present %v), want %v", tc.sample, got, ok, tc.want)
			}
		})
	}
	_, body := control(t, ctl, "GET", "/metrics")
	checkPromtool(t, needPromtool(t), body)
	expired := `lbd_service_sessions_expired_total{` + web + `}`
	poll(t, 10*time.Second, "the session expires", func() bool { return scrape()[expired] == 1 })
	if got := scrape()[`lbd_service_sessions{`+web+`}`]; got != 0 {
		t.Errorf("sessions after expiry: %v, want 0", got)
	}
}

// TestMetricsTBFAndACL: a service behind an ACL and a TBF of 3 requests
// per client: of 5 requests the ACL matches all, the TBF lets 3 through
// and refuses 2 (which no service takes: 503).
func TestMetricsTBFAndACL(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	cfg := strings.Replace(metricsConfig, "ListenHTTP", "ACL \"lan\"\n\t\"127.0.0.0/8\"\nEnd\nListenHTTP", 1)
	p := startLBD(t, fmt.Sprintf(cfg, "\t\tACL \"lan\"\n\t\tTBF \"%[remoteip 0]\" 1/60s 3\n"+be.block()))
	var codes []int
	for i := 0; i < 5; i++ {
		resp, _ := get(t, http.DefaultClient, "http://"+p.addr+"/traffic")
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 200 200 503 503]" {
		t.Fatalf("statuses %v, want three 200 then two 503", codes)
	}
	scrape := lbctlOK(t, filepath.Join(p.dir, "ctl.sock"), "metrics")
	checkPromtool(t, needPromtool(t), scrape)
	m := parseScrape(t, scrape)
	web := `listener="1",listener_name="main",service="1",service_name="web"`
	tests := []struct {
		name, sample string
		want         float64
	}{
		{name: "acl match", sample: `lbd_acl_decisions_total{` + web + `,acl="0",acl_name="lan",decision="match"}`, want: 5},
		{name: "acl nomatch", sample: `lbd_acl_decisions_total{` + web + `,acl="0",acl_name="lan",decision="nomatch"}`, want: 0},
		{name: "tbf allow", sample: `lbd_tbf_decisions_total{` + web + `,tbf="0",key="%[remoteip 0]",decision="allow"}`, want: 3},
		{name: "tbf refuse", sample: `lbd_tbf_decisions_total{` + web + `,tbf="0",key="%[remoteip 0]",decision="refuse"}`, want: 2},
		{name: "listener 5xx", sample: `lbd_listener_responses_total{listener="1",listener_name="main",code="5xx"}`, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := m[tc.sample]; !ok || got != tc.want {
				t.Errorf("%s = %v (present %v), want %v", tc.sample, got, ok, tc.want)
			}
		})
	}
}
