package functionaltests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wafRules exercises every phase; wafBackend answers what the response
// rules look for.
const wafRules = `SecRuleEngine On
SecRequestBodyAccess On
SecResponseBodyAccess On
SecDefaultAction "phase:1,log,deny"
SecRule REQUEST_URI "@beginsWith /deny" "id:1,phase:1,deny,status:401,msg:'no entry'" # a trailing comment, as libmodsecurity allows
SecRule REQUEST_URI "@beginsWith /moved" "id:2,phase:1,status:307,redirect:'https://elsewhere.test/'"
SecRule REQUEST_HEADERS:X-Forwarded-For "@ipMatch 10.1.1.0/24" "id:3,phase:1,deny"
SecRule REQUEST_BODY "@contains evilbody" "id:4,phase:2,redirect:'https://elsewhere.test/body'"
SecRule RESPONSE_HEADERS:X-Test "@contains evilhead" "id:5,phase:3,deny,status:502"
SecRule RESPONSE_BODY "@contains evilresp" "id:6,phase:4,deny"
`

func wafBackend(t *testing.T, seen *atomic.Int64) *backend {
	return startBackend(t, "127.0.0.2", "w", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		switch r.URL.Path {
		case "/resp-header":
			w.Header().Set("X-Test", "an evilhead")
		case "/resp-body":
			fmt.Fprint(w, "this body is evilresp")
			return
		case "/split":
			// The match comes in a second part, after the first was sent.
			fmt.Fprint(w, "part one\n")
			w.(http.Flusher).Flush()
			time.Sleep(300 * time.Millisecond)
			fmt.Fprint(w, "part two evilresp\n")
			return
		}
		echoHandler("w").ServeHTTP(w, r)
	}))
}

// wafConfig is a one-service listener with the rules in {DIR}/w.rules.
func wafConfig(head string, be *backend, extra string) string {
	return head + "ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 2\n\tWafRules \"{DIR}/w.rules\"\n" + extra +
		"\tService\n" + be.block() + "\tEnd\nEnd\n"
}

// startWAF writes the rules next to the configuration and starts lbd.
func startWAF(t *testing.T, cfg, rules string, args ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.rules"), []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cfg = strings.ReplaceAll(strings.ReplaceAll(cfg, "{PORT}", fmt.Sprint(port)), "{DIR}", dir)
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", port), args...)
}

func TestWAFPhasesThroughTheBinary(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	p := startWAF(t, wafConfig("Daemon 0\nLogLevel 0\nTimeOut 5\n", be, ""), wafRules)
	for _, tc := range []struct {
		name       string
		req        string
		wantStart  string // the answer starts so
		wantIn     string // and contains this
		wantBackOK bool   // the request reached the backend
	}{
		{"passes", "GET /fine HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 200 OK\r\n", "w GET /fine", true},
		{"phase 1 deny with the rule's status", "GET /deny/x HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 401 Unauthorized\r\n", "Content-Type: text/html", false},
		{"phase 1 redirect", "GET /moved HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 307 Temporary Redirect\r\n", "Location: https://elsewhere.test/\r\n", false},
		{"phase 1 ipMatch on X-Forwarded-For", "GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 10.1.1.5\r\n\r\n", "HTTP/1.1 403 Forbidden\r\n", "", false},
		{"phase 2 body", "POST / HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 14\r\n\r\na=evilbody&b=c", "HTTP/1.1 302 Found\r\n", "Location: https://elsewhere.test/body\r\n", false},
		{"phase 2 chunked body", "POST / HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n5\r\na=evi\r\n9\r\nlbody&b=c\r\n0\r\n\r\n", "HTTP/1.1 302 Found\r\n", "Location: https://elsewhere.test/body\r\n", false},
		{"phase 2 clean body passes", "POST /p HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\na=b&c=d", "HTTP/1.1 200 OK\r\n", "body=7", true},
		{"phase 3 response header", "GET /resp-header HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 502 Bad Gateway\r\n", "", true},
		{"phase 4 response body while held", "GET /resp-body HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 403 Forbidden\r\n", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := seen.Load()
			raw, _ := rawExchange(t, p.addr, []byte(tc.req), time.Second)
			if !strings.HasPrefix(string(raw), tc.wantStart) || !strings.Contains(string(raw), tc.wantIn) {
				t.Fatalf("answer %q, want it to start %q and contain %q", raw, tc.wantStart, tc.wantIn)
			}
			if got := seen.Load() > before; got != tc.wantBackOK {
				t.Fatalf("backend reached: %v, want %v", got, tc.wantBackOK)
			}
		})
	}
}

// TestWAFExpectContinue: the client is told to send the body, which the
// WAF reads before the backend sees anything.
func TestWAFExpectContinue(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	p := startWAF(t, wafConfig("Daemon 0\nLogLevel 0\n", be, ""), wafRules)
	c := dialRaw(t, p.addr)
	defer c.Close()
	send(t, c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\nExpect: 100-continue\r\nContent-Length: 14\r\n\r\n")
	if got := readFor(t, c, 2*time.Second); got != "HTTP/1.1 100 Continue\r\n\r\n" {
		t.Fatalf("interim answer %q", got)
	}
	send(t, c, "a=evilbody&b=c")
	if got := readFor(t, c, 2*time.Second); !strings.HasPrefix(got, "HTTP/1.1 302 Found\r\n") {
		t.Fatalf("final answer %q", got)
	}
	if seen.Load() != 0 {
		t.Fatal("the backend saw the request")
	}
}

// TestWAFCutsAStreamedBody: a match in a part of the body that comes
// after the first part was sent cannot be answered any more; the chunked
// stream is broken, as zproxy breaks it, and never looks complete.
func TestWAFCutsAStreamedBody(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	p := startWAF(t, wafConfig("Daemon 0\nLogLevel 0\nTimeOut 5\n", be, ""), wafRules)
	raw, closed := rawExchange(t, p.addr, []byte("GET /split HTTP/1.1\r\nHost: h\r\n\r\n"), 3*time.Second)
	s := string(raw)
	if !strings.HasPrefix(s, "HTTP/1.1 200 OK\r\n") || !strings.Contains(s, "part one\n") {
		t.Fatalf("the first part was not relayed: %q", s)
	}
	if strings.Contains(s, "evilresp") || strings.HasSuffix(s, "0\r\n\r\n") {
		t.Fatalf("the matching part went out, or the body looks complete: %q", s)
	}
	if !closed {
		t.Fatal("the connection stayed open")
	}
}

// TestWAFZproxyPagesAndCounters: zproxy's block page (HTTP/1.0, its
// headers, the ErrWAF file or the status's own), redirect page, and
// waf-hits and the 3xx/4xx hits on the control socket.
func TestWAFZproxyPagesAndCounters(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	dir := t.TempDir()
	for name, body := range map[string]string{"any.html": "request forbidden", "401.html": "who are you?"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "ctl.sock")
	cfg := wafConfig("Daemon 0\nLogLevel 0\n", be,
		"\tName web\n\tErrWAF \""+dir+"/any.html\"\n\tErrWAF 401 \""+dir+"/401.html\"\n")
	p := startWAF(t, cfg, wafRules, "-C", sock)
	waitSocket(t, sock)
	for _, tc := range []struct{ req, want string }{
		{"GET /deny HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.0 401 Unauthorized\r\nContent-Type: text/html\r\nContent-Length: 13\r\nExpires: now\r\nPragma: no-cache\r\nServer: zproxy\r\nCache-control: no-cache,no-store\r\n\r\nwho are you?\n"},
		{"GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 10.1.1.9\r\n\r\n", "HTTP/1.0 403 Forbidden\r\nContent-Type: text/html\r\nContent-Length: 18\r\nExpires: now\r\nPragma: no-cache\r\nServer: zproxy\r\nCache-control: no-cache,no-store\r\n\r\nrequest forbidden\n"},
		{"GET /moved HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.0 307 Temporary Redirect\r\nContent-Type: text/html\r\nContent-Length: 163\r\nLocation: https://elsewhere.test/\r\n\r\n<html><head><title>Redirect</title></head><body><h1>Redirect</h1><p>You should go to <a href=https://elsewhere.test/>https://elsewhere.test/</a></p></body></html>\n"},
	} {
		if raw, _ := rawExchange(t, p.addr, []byte(tc.req), time.Second); string(raw) != tc.want {
			t.Errorf("answer\n%q\nwant\n%q", raw, tc.want)
		}
	}
	var l struct {
		Hits3xx int `json:"3xx-code-hits"`
		Hits4xx int `json:"4xx-code-hits"`
		WAFHits int `json:"waf-hits"`
	}
	if err := json.Unmarshal([]byte(unixGet(t, sock, "/listener/0")), &l); err != nil {
		t.Fatal(err)
	}
	if l.WAFHits != 3 || l.Hits3xx != 1 || l.Hits4xx != 2 {
		t.Errorf("waf-hits %d, 3xx %d, 4xx %d; want 3, 1, 2", l.WAFHits, l.Hits3xx, l.Hits4xx)
	}
}

// TestWAFReload: a reload takes new rules; a rules file that does not
// parse is refused with its file and line, and the running rules stay.
func TestWAFReload(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	p := startWAF(t, wafConfig("Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\n", be, ""), wafRules)
	ctl := unixClient(filepath.Join(p.dir, "ctl.sock"))
	status := func(path string) int {
		raw, _ := rawExchange(t, p.addr, []byte("GET "+path+" HTTP/1.1\r\nHost: h\r\n\r\n"), time.Second)
		return statusOf(raw)
	}
	if s := status("/deny"); s != 401 {
		t.Fatalf("before: %d", s)
	}
	rules := filepath.Join(p.dir, "w.rules")
	changed := strings.Replace(wafRules, "@beginsWith /deny", "@beginsWith /forbidden", 1)
	if err := os.WriteFile(rules, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := control(t, ctl, "PATCH", "/config"); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	if s, s2 := status("/deny"), status("/forbidden"); s != 200 || s2 != 401 {
		t.Fatalf("after reload: /deny %d /forbidden %d, want 200 401", s, s2)
	}
	broken := changed + "SecRule ARGS \"@rx x\" \"id:99,deny,nosuchaction\"\n"
	if err := os.WriteFile(rules, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := control(t, ctl, "PATCH", "/config"); code != 400 {
		t.Fatalf("broken rules reloaded: %d", code)
	}
	if s := status("/forbidden"); s != 401 {
		t.Fatalf("after the refused reload: %d, want the running rules (401)", s)
	}
	line := fmt.Sprintf("w.rules:%d: ", strings.Count(changed, "\n")+1)
	if !strings.Contains(p.out.String(), line) || !strings.Contains(p.out.String(), `invalid action "nosuchaction"`) {
		t.Fatalf("the refusal does not name %q:\n%s", line, p.out.String())
	}
}

// TestWAFBuiltinCRS: WafRules "@crs" needs no files; its threshold is
// the operator's.
func TestWAFBuiltinCRS(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	cfg := "Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tWafRules \"@crs\"\n\tWafParanoia 1\n" +
		"\tService\n" + be.block() + "\tEnd\nEnd\n"
	p := startLBD(t, cfg)
	hdr := "Host: shop.test\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nAccept: text/html\r\n\r\n"
	for _, tc := range []struct {
		name, target string
		want         int
	}{
		{"benign search", "/search?q=blue+shoes&page=2", 200},
		{"sql injection", "/item?id=1%27%20UNION%20SELECT%20password%20FROM%20users--", 403},
		{"xss", "/q?x=%3Cscript%3Ealert(document.cookie)%3C%2Fscript%3E", 403},
		{"path traversal", "/files?name=../../../../etc/passwd", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := rawExchange(t, p.addr, []byte("GET "+tc.target+" HTTP/1.1\r\n"+hdr), time.Second)
			if s := statusOf(raw); s != tc.want {
				t.Fatalf("status %d, want %d: %q", s, tc.want, raw)
			}
		})
	}
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func send(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// readFor reads what arrives until the peer pauses for 200 ms (or d
// passes, or it closes).
func readFor(t *testing.T, c net.Conn, d time.Duration) string {
	t.Helper()
	var out []byte
	buf := make([]byte, 4096)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		wait := 200 * time.Millisecond
		if len(out) == 0 {
			wait = time.Until(deadline)
		}
		if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
	}
	return string(out)
}

// TestWAFRouteExplains: lbctl route says when a rule would decide the
// answer (rule, phase, message), changes no counter and logs nothing.
func TestWAFRouteExplains(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	p := startWAF(t, wafConfig("Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\n", be, ""), wafRules)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	r := explainVia(t, sock, "GET", "/deny/me")
	if r.Reply == nil || r.Reply.Status != 401 || r.Reply.Kind != "waf" || !strings.Contains(r.Reply.Why, "rule 1 (phase 1)") || !strings.Contains(r.Reply.Why, "no entry") {
		t.Fatalf("reply %+v, outcome %q", r.Reply, r.Outcome)
	}
	r = explainVia(t, sock, "GET", "/moved")
	if r.Reply == nil || r.Reply.Kind != "redirect" || r.Reply.Location != "https://elsewhere.test/" {
		t.Fatalf("redirect reply %+v", r.Reply)
	}
	r = explainVia(t, sock, "GET", "/fine")
	if r.Reply != nil || r.Backend == nil {
		t.Fatalf("a request no rule decides: reply %+v, backend %+v", r.Reply, r.Backend)
	}
	found := false
	for _, c := range r.Checks {
		found = found || (c.Check == "WAF" && c.OK)
	}
	if !found {
		t.Fatalf("no passed WAF check in %+v", r.Checks)
	}
	if seen.Load() != 0 || strings.Contains(p.out.String(), "WAF") {
		t.Fatalf("the dry run reached the backend or logged:\n%s", p.out.String())
	}
}

// TestWAFAccessLog: the access log names the rule that answered (Pound's
// extended format shows it where the backend would be; %{waf}N anywhere).
func TestWAFAccessLog(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	head := "Daemon 0\nLogFormat \"w\" \"%r %s %{waf}N\"\nLogLevel \"w\"\n"
	p := startWAF(t, wafConfig(head, be, ""), wafRules)
	for _, target := range []string{"/deny/x", "/moved", "/fine", "/split"} {
		rawExchange(t, p.addr, []byte("GET "+target+" HTTP/1.1\r\nHost: h\r\n\r\n"), time.Second)
	}
	waitFor(t, "four log lines", func() bool { return strings.Count(p.out.String(), " HTTP/1.1 ") >= 4 })
	for _, want := range []string{"GET /deny/x HTTP/1.1 401 1/1/deny", "GET /moved HTTP/1.1 307 2/1/redirect",
		"GET /fine HTTP/1.1 200 -", "GET /split HTTP/1.1 200 6/4/deny"} {
		if !strings.Contains(p.out.String(), want) {
			t.Errorf("no %q in the log:\n%s", want, p.out.String())
		}
	}
	p2 := startWAF(t, wafConfig("Daemon 0\nLogLevel 2\n", be, ""), wafRules)
	rawExchange(t, p2.addr, []byte("GET /deny/x HTTP/1.1\r\nHost: h\r\n\r\n"), time.Second)
	waitFor(t, "the extended log line", func() bool { return strings.Contains(p2.out.String(), "-> waf:1/1/deny)") })
}

// TestWAFBodyLimit: past SecRequestBodyLimit, ProcessPartial inspects
// the start and sends the whole body on untouched; Reject answers 413.
func TestWAFBodyLimit(t *testing.T) {
	var seen atomic.Int64
	be := wafBackend(t, &seen)
	body := strings.Repeat("0123456789", 10000) // 100 kB
	for _, tc := range []struct {
		action string
		want   string
	}{
		{"ProcessPartial", "body=100000"},
		{"Reject", "HTTP/1.1 413 "},
	} {
		t.Run(tc.action, func(t *testing.T) {
			rules := "SecRuleEngine On\nSecRequestBodyAccess On\nSecRequestBodyLimit 1000\nSecRequestBodyInMemoryLimit 1000\nSecRequestBodyLimitAction " + tc.action + "\n"
			p := startWAF(t, wafConfig("Daemon 0\nLogLevel 0\nTimeOut 5\n", be, ""), rules)
			req := fmt.Sprintf("POST /big HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			raw, _ := rawExchange(t, p.addr, []byte(req), 2*time.Second)
			if !strings.Contains(string(raw), tc.want) {
				t.Fatalf("answer %.300q, want %q in it", raw, tc.want)
			}
		})
	}
}

// TestWAFValidateSchemaRefused: lbd refuses Coraza's @validateSchema
// (and its build leaves it out: Makefile, SIZE_TAGS); a rule using it
// fails the configuration at the rule's file and line, saying why.
func TestWAFValidateSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "schema.json", `{"type": "object"}`)
	writeFile(t, dir, "w.rules", "SecRuleEngine On\nSecRequestBodyAccess On\n"+
		"SecRule REQUEST_BODY \"@validateSchema schema.json\" \"id:1,phase:2,deny\"\n")
	writeFile(t, dir, "lbd.cfg", strings.Replace(goodConfig, "\tService\n", "\tWafRules \"w.rules\"\n\tService\n", 1))
	out, code := runCLI(t, binary(t, "lbd"), dir, "-c", "-f", "lbd.cfg")
	want := `lbd: lbd.cfg:6.18-26: w.rules:3: failed to compile the directive "secrule": ` +
		"@validateSchema is not supported by lbd (see WafRules in lbd.cfg(5))\n"
	if code != 1 || out != want {
		t.Fatalf("exit %d, output %q; want exit 1, %q", code, out, want)
	}
}
