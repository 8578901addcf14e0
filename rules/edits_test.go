package rules

import (
	"strings"
	"testing"

	"lbd/config"
)

// zwrap puts zproxy listener and service statements into a zproxy file
// ("Name" makes it one).
func zwrap(listener, service string) string {
	return "ListenHTTP\n Name z\n Address 127.0.0.1\n Port 80\n" + listener +
		"\n Service\n" + service + "\n  BackEnd\n   Address 127.0.0.1\n   Port 81\n  End\n End\nEnd\n"
}

// compileZproxy compiles the first service's edits of a zproxy file.
func compileZproxy(t testing.TB, src string) (req, resp *Program) {
	t.Helper()
	cfg := loadCfg(t, src)
	if cfg.Dialect != config.DialectZproxy {
		t.Fatalf("dialect %s", cfg.Dialect)
	}
	env, err := NewEnv(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Listeners[0]
	req, resp, err = env.CompileZproxyEdits(NewZproxyEdits(cfg, l, l.Services[0]))
	if err != nil {
		t.Fatal(err)
	}
	return req, resp
}

// split renders a message as "before|... // after|..." around the place
// the proxy's own lines go.
func split(m *Message) string {
	join := func(ls [][]byte) string {
		s := make([]string, len(ls))
		for i, l := range ls {
			s[i] = string(l)
		}
		return strings.Join(s, "|")
	}
	before, after := m.Split()
	return join(before) + " // " + join(after)
}

func TestZproxyRequestEdits(t *testing.T) {
	cases := []struct {
		name              string
		listener, service string
		line              string
		headers           []string
		wantURL           string // "" : unchanged
		want              string
		bindHost          bool
	}{
		{name: "X-Forwarded-For rebuilt last from every received value",
			line: "GET /", headers: []string{"X-Forwarded-For: 192.0.2.1", "Host: h", "x-forwarded-for: 192.0.2.2"},
			want: "Host: h // X-Forwarded-For: 192.0.2.1, 192.0.2.2, 127.0.0.9"},
		{name: "removed, replaced, forwarded, added in that order",
			listener: ` AddRequestHeader "X-Added: 1"` + "\n" + ` RemoveRequestHeader "^Cookie"` + "\n" +
				` ReplaceHeader Request "^User-Agent" "curl/(.*)" "agent $1"`,
			line: "GET /", headers: []string{"User-Agent: curl/8.5", "Host: h", "Cookie: c=1", "Accept: */*"},
			want: "Host: h|Accept: */* // User-Agent: agent 8.5|X-Forwarded-For: 127.0.0.9|X-Added: 1"},
		{name: "the first replace rule that applies wins, received order kept",
			listener: ` ReplaceHeader Request "^X-A" "1" "one"` + "\n" + ` ReplaceHeader Request "^X-" "(.)" "[$1]"`,
			line:     "GET /", headers: []string{"X-B: 2", "X-A: 1", "Host: h"},
			want: "Host: h // X-B: [2]|X-A: one|X-Forwarded-For: 127.0.0.9"},
		{name: "a replace rule whose value does not match leaves the line",
			listener: ` ReplaceHeader Request "^X-A" "zzz" "y"`, line: "GET /", headers: []string{"X-A: 1"},
			want: "X-A: 1 // X-Forwarded-For: 127.0.0.9"},
		{name: "a service's list of a kind replaces the listener's",
			listener: ` AddRequestHeader "X-L: 1"` + "\n" + ` RemoveRequestHeader "^X-Gone"`,
			service:  `  AddRequestHeader "X-S: 1"`, line: "GET /", headers: []string{"X-Gone: 1"},
			want: " // X-Forwarded-For: 127.0.0.9|X-S: 1"},
		{name: "RewriteHost: the Host line last, for the backend",
			listener: ` RewriteHost 1`, line: "GET /", headers: []string{"Host: h", "Accept: */*"},
			want: "Accept: */* // X-Forwarded-For: 127.0.0.9|Host: ", bindHost: true},
		{name: "RewriteDestination: the Destination line after the added ones",
			listener: ` RewriteDestination 1` + "\n" + ` AddRequestHeader "X-Added: 1"`, line: "MOVE /a",
			headers: []string{"Destination: http://h/b", "Host: h"},
			want:    "Host: h // X-Forwarded-For: 127.0.0.9|X-Added: 1|Destination: http://h/b"},
		{name: "RewriteUrl: the first matching rule marked last ends the list",
			service: `  RewriteUrl "^/api/v1/(.*)" "/v1/$1" last` + "\n" + `  RewriteUrl "^/v1" "/never"`,
			line:    "GET /api/v1/users?id=3", wantURL: "/v1/users?id=3", want: " // X-Forwarded-For: 127.0.0.9"},
		{name: "RewriteUrl: rules apply in order on the result",
			service: `  RewriteUrl "^/a" "/b"` + "\n" + `  RewriteUrl "^/b" "/c"`,
			line:    "GET /a/x", wantURL: "/c/x", want: " // X-Forwarded-For: 127.0.0.9"},
		{name: "RewriteUrl on an absolute-form target works on its path",
			service: `  RewriteUrl "^/a" "/b"`, line: "GET http://h:80/a?q", wantURL: "/b?q", want: " // X-Forwarded-For: 127.0.0.9"},
		{name: "a PARM session's parameter is not forwarded, the query is",
			service: "  Session\n   Type PARM\n   TTL 60\n  End", line: "GET /p;sid=1?q=2",
			wantURL: "/p?q=2", want: " // X-Forwarded-For: 127.0.0.9"},
	}
	var st State
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := compileZproxy(t, zwrap(tc.listener, tc.service))
			request(&st, req.env, "127.0.0.9", tc.line, tc.headers...)
			orig := string(st.Req.URL)
			if err := req.Rewrite(&st, &st.Req); err != nil {
				t.Fatal(err)
			}
			if got := split(&st.Req); got != tc.want {
				t.Errorf("lines %q, want %q\n%s", got, tc.want, strings.Join(req.Listing(), "\n"))
			}
			wantURL := tc.wantURL
			if wantURL == "" {
				wantURL = orig
			}
			if string(st.Req.URL) != wantURL || st.Req.URLChanged != (tc.wantURL != "") {
				t.Errorf("URL %q (changed %v), want %q", st.Req.URL, st.Req.URLChanged, wantURL)
			}
			if st.Req.BindHost != tc.bindHost {
				t.Errorf("BindHost %v, want %v", st.Req.BindHost, tc.bindHost)
			}
		})
	}
}

// fakeLocations rewrites every Location to "http://public/<path>" and
// records the arguments it was called with.
type fakeLocations struct {
	mode    int
	undoURL bool
}

func (f *fakeLocations) RewriteLocation(dst, value []byte, mode int, undoURL bool) ([]byte, bool) {
	f.mode, f.undoURL = mode, undoURL
	i := strings.Index(string(value), "://")
	if i < 0 {
		return dst, false
	}
	rest := value[i+3:]
	j := strings.IndexByte(string(rest), '/')
	return append(append(dst, "http://public"...), rest[j:]...), true
}

func TestZproxyResponseEdits(t *testing.T) {
	cases := []struct {
		name              string
		listener, service string
		headers           []string
		want              string
		wantMode          int
	}{
		{name: "removed, replaced, added",
			listener: ` AddResponseHeader "X-Added: 1"` + "\n" + ` RemoveResponseHeader "^Server"` + "\n" +
				` ReplaceHeader Response "^X-Ver" "v([0-9]+)" "version $1"`,
			headers: []string{"Server: s", "X-Ver: v7", "Content-Length: 0"},
			want:    "Content-Length: 0 // X-Ver: version 7|X-Added: 1"},
		{name: "StrictTransportSecurity replaces the backend's, last",
			service: `  StrictTransportSecurity 100`, headers: []string{"Strict-Transport-Security: max-age=1", "Content-Length: 0"},
			want: "Content-Length: 0 // Strict-Transport-Security: max-age=100"},
		{name: "a rewritten Location follows the replaced lines",
			listener: ` RewriteLocation 2 0` + "\n" + ` ReplaceHeader Response "^X-Ver" "v" "w"`,
			headers:  []string{"Location: http://10.0.0.1:81/x", "X-Ver: v1", "Content-Location: ftp-no-scheme"},
			want:     "Content-Location: ftp-no-scheme // X-Ver: w1|Location: http://public/x", wantMode: 2},
	}
	var st State
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, resp := compileZproxy(t, zwrap(tc.listener, tc.service))
			loc := &fakeLocations{}
			request(&st, resp.env, "127.0.0.9", "GET /")
			st.Location = loc
			st.Resp.Reset()
			for _, h := range tc.headers {
				st.Resp.Lines = append(st.Resp.Lines, []byte(h))
			}
			if err := resp.Rewrite(&st, &st.Resp); err != nil {
				t.Fatal(err)
			}
			if got := split(&st.Resp); got != tc.want {
				t.Errorf("lines %q, want %q\n%s", got, tc.want, strings.Join(resp.Listing(), "\n"))
			}
			if loc.mode != tc.wantMode {
				t.Errorf("RewriteLocation mode %d, want %d", loc.mode, tc.wantMode)
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	cases := []struct {
		name, re, subject, repl string
		want                    string
		wantOff                 int
		ok                      bool
	}{
		{name: "groups", re: "^/api/(v[0-9])/(.*)", subject: "/api/v1/x?q", repl: "/$1-$2", want: "/v1-x?q", wantOff: 7, ok: true},
		{name: "text after the match is kept", re: "^/old", subject: "/old/a", repl: "/new", want: "/new/a", wantOff: 4, ok: true},
		{name: "an empty match drops the rest", re: "^", subject: "/a", repl: "/p", want: "/p", wantOff: 2, ok: true},
		{name: "dollar escapes and a group that did not take part", re: "(a)|(b)", subject: "b", repl: "$$$1", want: "$", wantOff: 1, ok: true},
		{name: "no match", re: "zzz", subject: "/a", repl: "x", want: "pre", ok: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := config.NewPattern(config.MatchRegex, tc.re, false)
			if err != nil {
				t.Fatal(err)
			}
			out, off, ok := Substitute([]byte("pre"), []byte(tc.subject), p, tc.repl)
			want := tc.want
			if tc.ok {
				want = "pre" + tc.want
			}
			if string(out) != want || ok != tc.ok || (ok && off != tc.wantOff) {
				t.Errorf("Substitute = %q, %d, %v; want %q, %d, %v", out, off, ok, want, tc.wantOff, tc.ok)
			}
		})
	}
}
