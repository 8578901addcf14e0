package proxy

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLogFormatSpecifiers(t *testing.T) {
	const req = "POST /echo/a/b?x=1&y=2 HTTP/1.1\nHost: www.ex.org:8080\nX-Multi: v\n" +
		"Authorization: Basic \"Ym9iOnB3\"\nContent-Length: 0\n\n"
	tests := []struct {
		name   string
		format string
		anon   bool
		h2     bool // the client came over HTTP/2
		client string
		want   string
	}{
		{name: "addresses", format: "%a|%h|%A|%p|%H", client: "192.0.2.77:1",
			want: "192.0.2.77|192.0.2.77|127.0.0.1|8080|http"},
		{name: "anonymise applies to %a only", format: "%a %h", anon: true, client: "192.0.2.77:1",
			want: "192.0.2.0 192.0.2.77"},
		{name: "anonymise IPv6 as Pound's anon_ip", format: "%a", anon: true, client: "[2001:db8::77]:1",
			want: "[2001:db8::0"},
		{name: "request parts", format: "%m %U %q %r", want: "POST /echo/a/b ?x=1&y=2 POST /echo/a/b?x=1&y=2 HTTP/1.1"},
		{name: "request line of an HTTP/2 client", format: "%r", h2: true, want: "POST /echo/a/b?x=1&y=2 HTTP/2.0"},
		{name: "headers", format: "[%{X-Multi}i][%{x-multi}I][%{None}i][%{None}I]", want: "[v][v][][-]"},
		{name: "quoted basic credentials", format: "%u", want: "bob"},
		{name: "status and bytes", format: "%s|%>s|%B|%b", want: "200|HTTP/1.1 200 OK|0|-"},
		{name: "objects", format: "%{service}N %{backend}N %{listener}N", want: "s 127.0.0.2:8081 -"},
		{name: "loci", format: "%{service}L|%{listener}L", want: "test.cfg:4.9-9.11|test.cfg:1.1-10.3"},
		{name: "process times", format: "%T %{s}T %{f}T %{ms}T %{us}T %D", want: "1 1 1.234 1234 1234567 1234"},
		{name: "clock times", format: "%{s}t %{msec}t %{msec_frac}t %{usec_frac}t",
			want: strconv.FormatInt(logStart.Unix(), 10) + " " + strconv.FormatInt(logStart.UnixMilli(), 10) + " 250 250000"},
		{name: "strftime", format: "%{%Y-%m-%d %H:%M:%S %z %a %b %e %j}t", want: "2026-11-30 07:50:03 +0100 Mon Nov 30 334"},
		{name: "end time", format: "%{end:%T}t", want: "07:50:04"},
		{name: "default clock format", format: "%t", want: "[30/Nov/2026:07:50:03 +0100]"},
		{name: "literal percent and dash", format: "100%% %l", want: "100% -"},
		{name: "unknown specifier printed verbatim", format: "a%Zb", want: "a%Zb"},
		{name: "missing brace printed verbatim", format: "a%{b", want: "a%{b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := loadFixture(t, poundCfg("", ""))
			client := tt.client
			if client == "" {
				client = "192.0.2.2:4000"
			}
			prog, _ := CompileLogFormat("t", tt.format)
			if prog == nil {
				t.Fatal("format refused")
			}
			f.st.Log = &AccessLog{Prog: prog, Anonymise: tt.anon}
			c := f.conn(t, client, crlfLines(req))
			c.http2 = tt.h2
			c.ex.start = logStart
			f.respond(t, c, testBackend("127.0.0.2:8081"), crlfLines("HTTP/1.1 200 OK\nContent-Length: 0\n\n"))
			got := string(c.appendLogLine(f.st, prog, nil, logStart.Add(1234567*time.Microsecond)))
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCompileLogFormatErrors(t *testing.T) {
	tests := []struct {
		name   string
		format string
		fatal  bool
		msg    string
	}{
		{name: "argument required", format: "%i", fatal: true, msg: "format specifier requires argument"},
		{name: "bad object", format: "%{pool}N", fatal: true, msg: "unrecognized Pound object name"},
		{name: "bad process time unit", format: "%{h}T", fatal: true, msg: "bad process time format"},
		{name: "unknown char is not fatal", format: "%Z", msg: "unknown format char"},
		{name: "missing brace is not fatal", format: "%{x", msg: "missing terminating `}'"},
		{name: "valid", format: "%a %{Host}i %>s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := CompileLogFormat("t", tt.format)
			if (prog == nil) != tt.fatal {
				t.Errorf("program nil = %v, want %v", prog == nil, tt.fatal)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if msg != tt.msg {
				t.Errorf("error %q, want %q", msg, tt.msg)
			}
		})
	}
}

func TestStrftimeConversions(t *testing.T) {
	tm := time.Date(2026, 3, 5, 14, 7, 9, 0, time.FixedZone("X", -(5*3600+30*60)))
	tests := []struct{ format, want string }{
		{"%A %B %d", "Thursday March 05"},
		{"%I:%M %p|%l|%k", "02:07 PM| 2|14"},
		{"%y %C %u %w", "26 20 4 4"},
		{"%D %R %F", "03/05/26 14:07 2026-03-05"},
		{"%Z %z", "X -0530"},
		{"%n%t%%|%Q", "\n\t%|%Q"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			if got := string(appendStrftime(nil, tm, compileStrftime(tt.format))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLogLineIsOneWrite(t *testing.T) {
	f := loadFixture(t, logCfg)
	w := &countingWriter{}
	f.st.Log = &AccessLog{Format: LogDetailed, Out: w, Prefix: "p: "}
	c := f.conn(t, "192.0.2.2:4000", crlfLines("GET /nothing HTTP/1.1\nHost: h\n\n"))
	c.handle(f.st)
	if w.writes != 1 || !bytes.HasPrefix(w.last, []byte("p: h:8080 192.0.2.2 ")) || !bytes.HasSuffix(w.last, []byte(" sec\n")) {
		t.Errorf("%d writes, last %q", w.writes, w.last)
	}
}

type countingWriter struct {
	writes int
	last   []byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.last = append(w.last[:0], p...)
	return len(p), nil
}

// FuzzLogFormat compiles arbitrary formats and runs them on a request:
// neither step may panic, whatever the configuration says.
func FuzzLogFormat(f *testing.F) {
	for _, s := range builtinFormats {
		f.Add(s)
	}
	f.Add("%{%Y%}t %{end:usec_frac}t %{x")
	f.Add("%>%{backend}L%{}i%%%")
	fx := loadFixture(f, poundCfg("", ""))
	f.Fuzz(func(t *testing.T, format string) {
		prog, _ := CompileLogFormat("f", format)
		if prog == nil {
			return
		}
		fx.st.Log = &AccessLog{Prog: prog, Anonymise: true}
		c := fx.conn(t, "192.0.2.2:4000", "GET /a?b HTTP/1.1\r\nHost: h:1\r\nAuthorization: Basic Og==\r\n\r\n")
		c.appendLogLine(fx.st, prog, nil, logStart)
	})
}

// FuzzExpand runs Pound's string expansion (redirect URLs, SetHeader
// values) on arbitrary templates.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"http://x/$1", "${1}$0(1)%[host]%[param a]%41%", "$$%$", "%[url", "$1(x", "${2"} {
		f.Add(s)
	}
	fx := loadFixture(f, poundCfg("", "\t\tURL \"^/(a)(b)?\"\n"))
	f.Fuzz(func(t *testing.T, tmpl string) {
		c := fx.conn(t, "192.0.2.2:4000", "GET /ab?a=1 HTTP/1.1\r\nHost: h:1\r\n\r\n")
		out, n, err := c.rs.Expand(c.ex.svc.Env, tmpl, nil, "Redirect expression")
		if err == nil && n == 0 && !strings.ContainsAny(tmpl, "$%") && string(out) != tmpl {
			t.Fatalf("%q expanded to %q", tmpl, out)
		}
	})
}
