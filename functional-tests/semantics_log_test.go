package functionaltests

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// semLogRequests are sent in order; each is one access log line.
var semLogRequests = []string{
	"GET /echo/x?a=1 HTTP/1.1\nHost: www.example.com\nReferer: http://ref.example/\nUser-Agent: ua/1\n" +
		"Authorization: Basic YWxpY2U6cHc=\n\n",
	"GET /other HTTP/1.1\nHost: www.example.com\n\n",
	"GET /gone HTTP/1.1\nHost: www.example.com\n\n",
	"GET /none HTTP/1.1\nHost: www.example.com\n\n",
	"GET /bad HTTP/1.1\nHost: www.example.com\nBad Header\n\n",
}

// semLogConfig has a proxied, a redirect and an error service.
func semLogConfig(global, listener string, be *semEcho) string {
	return "Daemon 0\nAlive 1\n" + global + "ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" + listener +
		"\tService \"echo\"\n\t\tURL \"^/echo\"\n" + be.block("BackEnd") + "\tEnd\n" +
		"\tService\n\t\tURL \"^/other\"\n\t\tRedirect 301 \"http://example.org\"\n\tEnd\n" +
		"\tService \"gone\"\n\t\tURL \"^/gone\"\n\t\tError 404\n\tEnd\nEnd\n"
}

var (
	semClock    = regexp.MustCompile(`\[\d\d/[A-Z][a-z][a-z]/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\]`)
	semDuration = regexp.MustCompile(`\d+\.\d{3} sec`)
)

// semLogLines sends the requests and returns the access log lines with
// ports, clock and durations masked.
func semLogLines(t *testing.T, p *proc, be *semEcho) []string {
	t.Helper()
	count := func() []string {
		var out []string
		for _, l := range strings.Split(p.out.String(), "\n") {
			if strings.Contains(l, "GET") {
				out = append(out, l)
			}
		}
		return out
	}
	for i, req := range semLogRequests {
		semSend(t, p.addr, req)
		for deadline := time.Now().Add(5 * time.Second); len(count()) <= i; {
			if time.Now().After(deadline) {
				t.Fatalf("no log line for request %d; output:\n%s", i, p.out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	lines := count()
	for i, l := range lines {
		l = strings.ReplaceAll(l, portOf(p.addr), "{PORT}")
		l = strings.ReplaceAll(l, be.addr(), "{BE}")
		l = semClock.ReplaceAllString(l, "[TIME]")
		lines[i] = semDuration.ReplaceAllString(l, "T sec")
	}
	return lines
}

// semSend sends one raw request and reads until the answer is complete
// (the proxy closes or answers fully).
func semSend(t *testing.T, addr, raw string) {
	t.Helper()
	rawExchange(t, addr, []byte(strings.ReplaceAll(raw, "\n", "\r\n")+""), 300*time.Millisecond)
}

func TestSemanticsAccessLogFormats(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", nil)
	tests := []struct {
		name, global, listener string
		want                   []string
	}{
		{name: "LogLevel 1 regular", global: "LogLevel 1\n", want: []string{
			"lbd: 127.0.0.1 GET /echo/x?a=1 HTTP/1.1 - HTTP/1.1 200 OK",
			"lbd: 127.0.0.1 GET /other HTTP/1.1 - 301 -",
			"lbd: 127.0.0.1 GET /gone HTTP/1.1 - 404 Not Found",
			"lbd: 127.0.0.1 GET /none HTTP/1.1 - 503 Service Unavailable",
			"lbd: 127.0.0.1 GET /bad HTTP/1.1 - 400 Bad Request"}},
		{name: "LogLevel 2 extended", global: "LogLevel 2\n", want: []string{
			"lbd: 127.0.0.1 GET /echo/x?a=1 HTTP/1.1 - HTTP/1.1 200 OK (www.example.com/echo -> {BE}) T sec",
			"lbd: 127.0.0.1 GET /other HTTP/1.1 - 301 - (www.example.com/- -> redirect:http://example.org) T sec",
			"lbd: 127.0.0.1 GET /gone HTTP/1.1 - 404 Not Found (www.example.com/gone -> error:404) T sec",
			"lbd: 127.0.0.1 GET /none HTTP/1.1 - 503 Service Unavailable (www.example.com/- -> -) T sec",
			"lbd: 127.0.0.1 GET /bad HTTP/1.1 - 400 Bad Request (www.example.com/- -> -) T sec"}},
		{name: "LogLevel 3 vhost_combined", global: "LogLevel 3\n", want: []string{
			`lbd: www.example.com:{PORT} 127.0.0.1 - alice [TIME] "GET /echo/x?a=1 HTTP/1.1" 200 {LEN} "http://ref.example/" "ua/1"`,
			`lbd: www.example.com:{PORT} 127.0.0.1 - - [TIME] "GET /other HTTP/1.1" 301 - "" ""`,
			`lbd: www.example.com:{PORT} 127.0.0.1 - - [TIME] "GET /gone HTTP/1.1" 404 189 "" ""`,
			`lbd: www.example.com:{PORT} 127.0.0.1 - - [TIME] "GET /none HTTP/1.1" 503 292 "" ""`,
			`lbd: www.example.com:{PORT} 127.0.0.1 - - [TIME] "GET /bad HTTP/1.1" 400 223 "" ""`}},
		{name: "LogLevel 4 combined", global: "LogLevel \"combined\"\n", want: []string{
			`lbd: 127.0.0.1 - alice [TIME] "GET /echo/x?a=1 HTTP/1.1" 200 {LEN} "http://ref.example/" "ua/1"`,
			`lbd: 127.0.0.1 - - [TIME] "GET /other HTTP/1.1" 301 - "" ""`,
			`lbd: 127.0.0.1 - - [TIME] "GET /gone HTTP/1.1" 404 189 "" ""`,
			`lbd: 127.0.0.1 - - [TIME] "GET /none HTTP/1.1" 503 292 "" ""`,
			`lbd: 127.0.0.1 - - [TIME] "GET /bad HTTP/1.1" 400 223 "" ""`}},
		{name: "LogLevel 5 detailed, set on the listener", global: "LogLevel 0\n", listener: "\tLogLevel 5\n", want: []string{
			`lbd: www.example.com:{PORT} 127.0.0.1 - alice [TIME] "GET /echo/x?a=1 HTTP/1.1" 200 {LEN} "http://ref.example/" "ua/1" (echo -> {BE}) T sec`,
			`lbd: www.example.com:{PORT} 127.0.0.1 - - [TIME] "GET /other HTTP/1.1" 301 - "" "" (- -> redirect:http://example.org) T sec`,
			`lbd: www.example.com:{PORT} 127.0.0.1 - - [TIME] "GET /gone HTTP/1.1" 404 189 "" "" (gone -> error:404) T sec`,
			`lbd: www.example.com:{PORT} 127.0.0.1 - - [TIME] "GET /none HTTP/1.1" 503 292 "" "" (- -> -) T sec`,
			`lbd: www.example.com:{PORT} 127.0.0.1 - - [TIME] "GET /bad HTTP/1.1" 400 223 "" "" (- -> -) T sec`}},
		{name: "LogFormat with Anonymise", global: "Anonymise\nLogFormat \"mine\" \"%a|%h|%m|%U|%q|%s|%{service}N|%{X-None}I\"\nLogLevel \"mine\"\n",
			want: []string{
				"lbd: 127.0.0.0|127.0.0.1|GET|/echo/x|?a=1|200|echo|-",
				"lbd: 127.0.0.0|127.0.0.1|GET|/other||301|-|-",
				"lbd: 127.0.0.0|127.0.0.1|GET|/gone||404|gone|-",
				"lbd: 127.0.0.0|127.0.0.1|GET|/none||503|-|-",
				"lbd: 127.0.0.0|127.0.0.1|GET|/bad||400|-|-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startLBD(t, semLogConfig(tt.global, tt.listener, be))
			got := semLogLines(t, p, be)
			// The first answer's body is the head the backend received.
			head := semLines(semLogRequests[0][:len(semLogRequests[0])-1]+
				"X-Forwarded-For: 127.0.0.1\nX-Forwarded-Proto: http\nX-Forwarded-Port: {LPORT}\n\n", portOf(p.addr))
			for i, want := range tt.want {
				want = strings.ReplaceAll(want, "{LEN}", strconv.Itoa(len(head)))
				if i >= len(got) || got[i] != want {
					t.Errorf("line %d:\n got %q\nwant %q", i, at(got, i), want)
				}
			}
		})
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

func TestSemanticsLogLevelZeroLogsNothing(t *testing.T) {
	be := semStartEcho(t, "127.0.0.2", "one", nil)
	p := startLBD(t, semLogConfig("LogLevel 0\n", "", be))
	for _, req := range semLogRequests[:4] {
		semSend(t, p.addr, req)
	}
	if strings.Contains(p.out.String(), "GET /") {
		t.Errorf("LogLevel 0 logged:\n%s", p.out.String())
	}
}

func TestSemanticsAccessLogAfterLargeBodies(t *testing.T) {
	big := strings.Repeat("x", 200000)
	be := semStartEcho(t, "127.0.0.2", "one", func(string) string { return "X-Pad: " + big[:100] + "\r\n" })
	p := startLBD(t, semLogConfig("LogLevel 2\n", "", be))
	raw := "POST /echo/big HTTP/1.1\r\nHost: www.example.com\r\nContent-Length: 200000\r\n\r\n" + big
	rawExchange(t, p.addr, []byte(raw), 300*time.Millisecond)
	want := "lbd: 127.0.0.1 POST /echo/big HTTP/1.1 - HTTP/1.1 200 OK (www.example.com/echo -> " + be.addr() + ") "
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(p.out.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no line %q in:\n%.500s", want, p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSemanticsAccessLogOneLinePerFailure: a request whose backend
// refuses the connection, or is known dead, is logged once, as any other.
func TestSemanticsAccessLogOneLinePerFailure(t *testing.T) {
	port := freePort(t)
	p := startLBD(t, "Daemon 0\nAlive 30\nLogLevel 1\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n"+
		"\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort "+strconv.Itoa(port)+"\n\t\tEnd\n\tEnd\nEnd\n")
	const n = 3
	for i := 0; i < n; i++ {
		semSend(t, p.addr, "GET /down"+strconv.Itoa(i)+" HTTP/1.1\nHost: x\n\n")
	}
	count := func() int { return strings.Count(p.out.String(), "GET /down") }
	for deadline := time.Now().Add(5 * time.Second); count() < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a second line would follow the first at once
	for i := 0; i < n; i++ {
		if got := strings.Count(p.out.String(), "GET /down"+strconv.Itoa(i)+" "); got != 1 {
			t.Errorf("request %d logged %d times:\n%s", i, got, p.out.String())
		}
	}
}
