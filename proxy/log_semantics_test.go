package proxy

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lbd/http1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/log")

const logCfg = `ListenHTTP
	Address 127.0.0.1
	Port 8080
	Service "default"
		URL "^/echo"
		BackEnd
			Address 127.0.0.2
			Port 8081
		End
	End
	Service "redir"
		URL "^/other"
		Redirect 301 "http://example.org"
	End
	Service
		URL "^/missing"
		Error 404
	End
	Service "moved"
		URL "^/moved"
		Redirect "http://example.org/new"
	End
End
`

// logStart is when the logged requests start: a fixed instant in a
// fixed zone, so %t is reproducible.
var logStart = time.Date(2026, 11, 30, 7, 50, 3, 250e6, time.FixedZone("CET", 3600))

// logScenario drives one exchange to its log line.
type logScenario struct {
	name   string
	client string
	req    string
	// resp is the backend's response head for a proxied request; empty
	// means the proxy answers itself through handle.
	resp  string
	bytes int64
}

var logScenarios = []logScenario{
	{name: "proxied", client: "192.0.2.2:4000",
		req: "GET /echo/foo?x=1 HTTP/1.1\nHost: www.example.com:8080\nReferer: http://ref.example/\n" +
			"User-Agent: curl/8.5\nAuthorization: Basic YWxpY2U6c2VjcmV0\n\n",
		resp: "HTTP/1.1 200 OK\nContent-Length: 1234\n\n", bytes: 1234},
	{name: "proxied HTTP/1.0 backend, empty body, no Host", client: "192.0.2.3:4000",
		req:  "HEAD /echo HTTP/1.0\n\n",
		resp: "HTTP/1.0 404 Not Found\nContent-Length: 10\n\n"},
	{name: "IPv6 client", client: "[2001:db8::1]:4000",
		req:  "GET /echo HTTP/1.1\nHost: h\n\n",
		resp: "HTTP/1.1 204 No Content\n\n"},
	{name: "no service", client: "192.0.2.2:4000", req: "GET /nothing HTTP/1.1\nHost: h\n\n"},
	{name: "redirect", client: "192.0.2.2:4000", req: "GET /other HTTP/1.1\nHost: 127.0.0.1:8080\n\n"},
	{name: "redirect with path", client: "192.0.2.2:4000", req: "GET /moved HTTP/1.1\nHost: h\n\n"},
	{name: "error backend", client: "192.0.2.2:4000", req: "GET /missing HTTP/1.1\nHost: h\nUser-Agent: ua\n\n"},
	{name: "method not allowed", client: "192.0.2.2:4000", req: "PUT /echo HTTP/1.1\nHost: h\n\n"},
	{name: "bad request", client: "192.0.2.2:4000", req: "GET /a HTTP/1.1\nBad Header\n\n"},
	{name: "line too long", client: "192.0.2.2:4000", req: "GET /" + string(bytes.Repeat([]byte("a"), 5000))},
}

// logLine runs sc on a fresh connection of f and returns what the
// access log wrote.
func (f *fixture) logLine(t *testing.T, sc logScenario) string {
	t.Helper()
	var out bytes.Buffer
	f.st.Log.Out = &out
	c := f.conn(t, sc.client, crlfLines(sc.req))
	c.now = logStart
	err := http1.ParseRequestHead((*c.buf)[:c.w], &c.req, &f.st.Limits)
	switch {
	case err != nil:
		var he *http1.Error
		if !errors.As(err, &he) {
			t.Fatalf("request does not fail as a head error: %v", err)
		}
		c.headError(f.st, err)
	case sc.resp != "":
		c.ex = exchange{start: logStart, svc: c.ex.svc}
		f.respond(t, c, testBackend("127.0.0.2:8081"), crlfLines(sc.resp))
		c.ex.bytes = sc.bytes
		c.logRequest(f.st)
	default:
		c.handle(f.st)
	}
	return out.String()
}

func TestLogFormatsGolden(t *testing.T) {
	for format := LogRegular; format <= LogDetailed; format++ {
		name := builtinNames[format]
		t.Run(name, func(t *testing.T) {
			f := loadFixture(t, logCfg)
			f.st.Log = &AccessLog{Format: format, Prefix: "pound: ", now: func() time.Time {
				return logStart.Add(12*time.Millisecond + 700*time.Microsecond)
			}}
			var got bytes.Buffer
			for _, sc := range logScenarios {
				got.WriteString(f.logLine(t, sc))
			}
			path := filepath.Join("testdata", "log", name+".golden")
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("log lines differ from %s:\ngot:\n%s\nwant:\n%s", path, got.Bytes(), want)
			}
		})
	}
}

func TestNullFormatLogsNothing(t *testing.T) {
	f := loadFixture(t, logCfg)
	f.st.Log = &AccessLog{Format: LogNull}
	for _, sc := range logScenarios[:5] {
		if line := f.logLine(t, sc); line != "" {
			t.Errorf("%s: logged %q", sc.name, line)
		}
	}
}

// flakyWriter fails while down is set, like a full disk or a dead syslog.
type flakyWriter struct {
	down  bool
	lines int
}

func (w *flakyWriter) Write(b []byte) (int, error) {
	if w.down {
		return 0, errors.New("no space left on device")
	}
	w.lines++
	return len(b), nil
}

// A failing access log is reported once per outage, not once per request
// and not never.
func TestAccessLogWriteFailureReportedOncePerOutage(t *testing.T) {
	f := loadFixture(t, logCfg)
	var diags []string
	f.st.Diag = func(msg string) { diags = append(diags, msg) }
	w := &flakyWriter{}
	f.st.Log = &AccessLog{Format: LogRegular}
	logTo := func(n int) {
		for i := 0; i < n; i++ {
			c := f.conn(t, "192.0.2.2:4000", crlfLines("GET /echo HTTP/1.1\nHost: h\n\n"))
			c.ex = exchange{start: logStart, status: 200}
			f.st.Log.Out = w
			c.logRequest(f.st)
		}
	}
	steps := []struct {
		name      string
		down      bool
		requests  int
		wantDiags int
		wantLines int
	}{
		{name: "healthy", requests: 2, wantDiags: 0, wantLines: 2},
		{name: "first outage", down: true, requests: 3, wantDiags: 1, wantLines: 2},
		{name: "recovered", requests: 1, wantDiags: 1, wantLines: 3},
		{name: "second outage", down: true, requests: 2, wantDiags: 2, wantLines: 3},
	}
	for _, s := range steps {
		w.down = s.down
		logTo(s.requests)
		if len(diags) != s.wantDiags || w.lines != s.wantLines {
			t.Fatalf("%s: %d diagnostics %q, %d lines; want %d and %d", s.name, len(diags), diags, w.lines, s.wantDiags, s.wantLines)
		}
	}
	if !strings.Contains(diags[0], "access log: no space left on device") {
		t.Errorf("diagnostic %q does not name the log and the error", diags[0])
	}
}
