package lbctl

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"lbd/adminapi"
)

// poundListing is poundctl's default output for the fixture.
const poundListing = `Server time: 2026-11-30T05:40:00.000000
Pound version: 9.9.9
PID: 4242
Workers:
  Min:     5
  Max:     128
  Current: 5
  Active:  1
Idle timeout: 30

Listeners:

  0. Listener http:///run/lbd.sock enabled
     0. Service active
        0. control (0)  active
     Session type: NONE
  1. Listener "main" http://127.0.0.1:8080 enabled
     0. Service "web" active
        0. backend (0) http 10.0.0.1:80 5 alive active
        1. backend (0) http 10.0.0.2:80 5 alive disabled
        2. backend (65535) http 10.0.0.9:80 1 dead active
     Session type: COOKIE
       0. Session abc 1 2026-11-30T05:45:00.000000
     1. Service active
        0. redirect (0) 301 http://example.org active
     Session type: NONE

Global services:

     0. Service "fallback" active
        0. backend (0) http 10.0.1.1:8080 5 alive active
     Session type: NONE
`

// poundTable is lbctl's table for the fixture: requests and latency of
// backend /1/0/0 come from GET /metrics.
const poundTable = `PATH    TYPE      NAME      ADDRESS                 STATE     PRIORITY  GROUP  CONNS  REQUESTS  LATENCY  SESSIONS
/0      listener  -         http:///run/lbd.sock    enabled   -         -      -      -         -        -
/0/0    service   -         -                       enabled   -         -      -      -         -        -
/0/0/0  control   -         -                       active    1         0      -      0         -        -
/1      listener  main      http://127.0.0.1:8080   enabled   -         -      -      -         -        -
/1/0    service   web       -                       enabled   -         -      -      -         -        1
/1/0/0  backend   -         http://10.0.0.1:80      active    5         0      -      14        1.5ms    -
/1/0/1  backend   -         http://10.0.0.2:80      disabled  5         0      -      0         -        -
/1/0/2  backend   -         http://10.0.0.9:80      dead      1         65535  -      0         -        -
/1/1    service   -         -                       enabled   -         -      -      -         -        -
/1/1/0  redirect  -         301 http://example.org  active    1         0      -      0         -        -
/-/0    service   fallback  -                       enabled   -         -      -      -         -        -
/-/0/0  backend   -         http://10.0.1.1:8080    active    5         0      -      0         -        -
`

// webTable is the table of service /1/0 with %d sessions.
const webTable = `PATH    TYPE     NAME  ADDRESS             STATE     PRIORITY  GROUP  CONNS  REQUESTS  LATENCY  SESSIONS
/1/0    service  web   -                   enabled   -         -      -      -         -        %d
/1/0/0  backend  -     http://10.0.0.1:80  active    5         0      -      14        1.5ms    -
/1/0/1  backend  -     http://10.0.0.2:80  disabled  5         0      -      0         -        -
/1/0/2  backend  -     http://10.0.0.9:80  dead      1         65535  -      0         -        -
`

const coreText = `Server time: 2026-11-30T05:40:00.000000
Pound version: 9.9.9
PID: 4242
Workers:
  Min:     5
  Max:     128
  Current: 5
  Active:  1
Idle timeout: 30
`

// cmdCase is one command run against a fresh fake server.
type cmdCase struct {
	name     string
	prog     string // "" means lbctl
	args     []string
	noReload bool                  // Pound server without PATCH /config
	setup    func(*fakeController) // adjusts the fixture first
	code     int                   // exit status
	out      string                // exact stdout, when outHas is empty
	outHas   []string              // substrings of stdout
	errHas   string                // substring of stderr; "" = stderr empty
	calls    string                // exact Controller calls
}

// runCases runs each case with -s pointing at its own server.
func runCases(t *testing.T, cases []cmdCase, server func(*testing.T, cmdCase) (string, *fakeController)) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock, fc := server(t, tc)
			if tc.setup != nil {
				tc.setup(fc)
			}
			prog := tc.prog
			if prog == "" {
				prog = "lbctl"
			}
			r := run(nil, append([]string{"/usr/sbin/" + prog, "-s", sock}, tc.args...)...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tc.code, r.stderr)
			}
			if len(tc.outHas) == 0 && r.stdout != tc.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, tc.out)
			}
			for _, s := range tc.outHas {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			if (tc.errHas == "") != (r.stderr == "") || !strings.Contains(r.stderr, tc.errHas) {
				t.Errorf("stderr %q, want it to contain %q", r.stderr, tc.errHas)
			}
			if got := fc.Calls(); got != tc.calls {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
		})
	}
}

// withLimits gives the fixture's listener a password file and its
// service "web" two rate limits and another password file.
func withLimits(fc *fakeController) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	l := &fc.st.Listeners[0]
	l.Limits.PasswordFiles = []adminapi.PasswordFile{{Path: "/etc/lbd/admins", Generation: 1, Users: 2}}
	l.Services[0].Limits = adminapi.Limits{
		RateLimits: []adminapi.RateLimit{{Key: "%[jwt sub]", Interval: 100 * time.Millisecond, Burst: 20, Buckets: 3},
			{Key: "%[remoteip 0]", Interval: 2 * time.Second, Burst: 1}},
		PasswordFiles: []adminapi.PasswordFile{{Path: "/etc/lbd/users", Watched: true, Generation: 4, Users: 12}},
	}
}

// limitsTable is what the table of /1 adds for withLimits.
const limitsTable = `
PATH  TBF KEY        RATE   BURST  BUCKETS
/1/0  %[jwt sub]     10/s   20     3
/1/0  %[remoteip 0]  0.5/s  1      0

PATH  BASICAUTH FILE   GENERATION  USERS  WATCHED
/1    /etc/lbd/admins  1           2      no
/1/0  /etc/lbd/users   4           12     yes
`

func TestPoundDialect(t *testing.T) {
	cases := []cmdCase{
		{name: "poundctl default listing", prog: "poundctl", out: poundListing},
		{name: "lbctl table", out: poundTable},
		{name: "list listener by name", prog: "poundctl", args: []string{"list", "/main"},
			outHas: []string{"Listener \"main\" http://127.0.0.1:8080 enabled\n     0. Service \"web\" active\n"}},
		{name: "list backend template", args: []string{"-T", "default", "list", "/1/0/2"},
			out: "backend (65535) http 10.0.0.9:80 1 dead active\n"},
		{name: "list global service", args: []string{"list", "/-/0"}, outHas: []string{"\n/-/0/0  backend  -         http://10.0.1.1:8080  active   5         0      -      0         -        -\n"}},
		{name: "list raw json", args: []string{"-j", "list", "/1/0/0"}, outHas: []string{`"address":"10.0.0.1:80", "alive":true`}},
		{name: "list json indented", args: []string{"-j", "-i", "2", "list", "/1/0/0"}, outHas: []string{"{\n  \"address\": \"10.0.0.1:80\",\n"}},
		{name: "list quiet", args: []string{"-q", "list", "/1/1"}, out: "/1/1\n/1/1/0\n"},
		{name: "table with rate limits and password files", args: []string{"list", "/1"}, setup: withLimits,
			outHas: []string{"/1/1/0  redirect  -     301 http://example.org  active    1         0      -      0         -        -\n" + limitsTable}},
		{name: "service table with its limits only", args: []string{"list", "/1/0"}, setup: withLimits,
			outHas: []string{"\n\nPATH  TBF KEY        RATE   BURST  BUCKETS\n/1/0  %[jwt sub]     10/s   20     3\n",
				"\nPATH  BASICAUTH FILE  GENERATION  USERS  WATCHED\n/1/0  /etc/lbd/users  4           12     yes\n"}},
		{name: "limits in the json", args: []string{"-j", "list", "/1/0"}, setup: withLimits,
			outHas: []string{`"tbf":[{"buckets":3, "burst":20, "interval":100000000, "key":"%[jwt sub]"}, `,
				`"basic_auth":[{"file":"/etc/lbd/users", "generation":4, "users":12, "watch":true}]`}},
		{name: "quiet listing has paths only", args: []string{"-q", "list", "/1/0"}, setup: withLimits,
			out: "/1/0\n/1/0/0\n/1/0/1\n/1/0/2\n"},
		{name: "list unknown backend", args: []string{"list", "/1/0/9"}, code: 1,
			errHas: "lbctl: backend 9 not found in service 0 of listener 1 (backends are numbered by index, 0 to 2)\n"},
		{name: "poundctl error prefix", prog: "poundctl", args: []string{"list", "/7"}, code: 1, errHas: "poundctl: Not Found\n"},
		{name: "list bad uri", args: []string{"list", "1"}, code: 1, errHas: "lbctl: bad uri: should start with a /"},
		{name: "list too many arguments", args: []string{"list", "/1", "/2"}, code: 1, errHas: "too many arguments"},
		{name: "unknown command", args: []string{"frob"}, code: 1, errHas: `lbctl: unknown command "frob"`},
		{name: "core", args: []string{"core"}, out: coreText},
		{name: "core json", args: []string{"-j", "core"}, outHas: []string{`"pid":4242`, `"version":"9.9.9"`}},
		{name: "log global", args: []string{"log"}, out: "Global log level: regular\n"},
		{name: "log listener", args: []string{"log", "/main"}, out: "Global log level: regular\nListener \"main\" log level: (global)\n"},
		{name: "log set listener", args: []string{"log", "/1", "combined"}, calls: `SetLogLevel 0 "combined"`,
			out: "Global log level: regular\nListener 1 log level: combined\n"},
		{name: "log set global", args: []string{"log", "/", "extended"}, calls: `SetLogLevel -1 "extended"`, out: "Global log level: extended\n"},
		{name: "log clear listener", args: []string{"log", "-d", "/1"}, calls: `SetLogLevel 0 ""`,
			out: "Global log level: regular\nListener 1 log level: (global)\n"},
		{name: "log set quiet", args: []string{"-q", "log", "/1", "combined"}, calls: `SetLogLevel 0 "combined"`},
		{name: "log unknown format", args: []string{"log", "/1", "fancy"}, code: 1, errHas: "lbctl: unknown format \"fancy\"\n", calls: `SetLogLevel 0 "fancy"`},
		{name: "log clear with format", args: []string{"log", "-d", "/1", "x"}, code: 1, errHas: "too many arguments"},
		{name: "disable backend", args: []string{"disable", "/1/0/1"}, calls: "SetEnabled 0/0/1 false"},
		{name: "on is enable", args: []string{"on", "/main/web/1"}, calls: "SetEnabled 0/0/1 true"},
		{name: "off listener", args: []string{"off", "/1"}, calls: "SetEnabled 0/-1/-1 false"},
		{name: "disable global service", args: []string{"disable", "/-/0"}, calls: "SetEnabled -1/0/-1 false"},
		{name: "enable json reply", args: []string{"-j", "enable", "/1/0"}, out: "true\n", calls: "SetEnabled 0/0/-1 true"},
		{name: "disable unknown backend", args: []string{"disable", "/1/0/9"}, code: 1, errHas: "lbctl: backend 9 not found in service 0 of listener 1"},
		{name: "disable unknown listener", args: []string{"disable", "/7"}, code: 1, errHas: "lbctl: listener 7 not found\n"},
		{name: "disable control socket", args: []string{"disable", "/0"}, code: 1, errHas: "lbctl: listener 0 is the control socket itself: it cannot be changed\n"},
		// As poundctl, the status text alone, as Pound's poundctl prints it.
		{name: "poundctl: disable control socket", prog: "poundctl", args: []string{"disable", "/0"}, code: 1, errHas: "poundctl: Bad Request\n"},
		{name: "disable needs a path", args: []string{"disable"}, code: 1, errHas: "lbctl: required argument missing\n"},
		{name: "add session", args: []string{"add", "/1/0/0", "k1"}, calls: "AddSession 0/0 k1->0",
			out: fmt.Sprintf(webTable, 2)},
		{name: "poundctl add session", prog: "poundctl", args: []string{"add", "/1/0/0", "k1"}, calls: "AddSession 0/0 k1->0",
			outHas: []string{"Service \"web\" active\n", "       1. Session k1 0 2026-11-30T05:41:00.000000\n"}},
		{name: "add session key escaped", args: []string{"-q", "session", "add", "/1/0/2", "a b&c=d"}, calls: "AddSession 0/0 a b&c=d->2"},
		{name: "add needs a key", args: []string{"add", "/1/0/0"}, code: 1, errHas: "required argument missing"},
		{name: "add needs a backend", args: []string{"add", "/1/0", "k"}, code: 1, errHas: "bad uri: backend not specified"},
		{name: "delete session", args: []string{"del", "/1/0", "abc"}, calls: "DeleteSession 0/0 abc",
			out: fmt.Sprintf(webTable, 0)},
		{name: "delete with backend", args: []string{"delete", "/1/0/1", "abc"}, code: 1, errHas: "bad uri: spurious backend specification"},
		{name: "session list", args: []string{"session", "list"},
			out: "SERVICE  KEY  BACKEND          EXPIRES                     LAST-SEEN\n/1/0     abc  1 (10.0.0.2:80)  2026-11-30T05:45:00.000000  -\n"},
		{name: "session list quiet", args: []string{"-q", "session", "list", "/1/0"}, out: "abc\n"},
		{name: "session list too deep", args: []string{"session", "list", "/1/0/0"}, code: 1, errHas: "spurious backend"},
		{name: "session flush service", args: []string{"session", "flush", "/1/0"}, calls: "DeleteSession 0/0 abc"},
		{name: "session flush other backend", args: []string{"session", "flush", "/1/0/0"}},
		{name: "session flush backend", args: []string{"session", "flush", "/1/0/1"}, calls: "DeleteSession 0/0 abc"},
		{name: "session flush unknown backend", args: []string{"session", "flush", "/1/0/5"}, code: 1, errHas: "/1/0/5: Not Found"},
		{name: "metrics", args: []string{"metrics"}, outHas: []string{"# TYPE pound_uptime counter\n", "# EOF\n"}},
		{name: "reload", args: []string{"reload"}, calls: "Reload"},
		{name: "reload refused", args: []string{"reload"}, setup: func(fc *fakeController) { fc.reloadErr = errors.New("bad file") },
			code: 1, errHas: "lbctl: the configuration was not reloaded; the running one stays:\n  bad file\n", calls: "Reload"},
		{name: "reload refused with every error", args: []string{"reload"},
			setup: func(fc *fakeController) {
				fc.reloadErr = errors.Join(errors.New("a.cfg:2.1-6: unrecognized keyword \"Deamon\""), errors.New("a.cfg:5.9: no listeners defined"))
			},
			code: 1, errHas: "lbctl: the configuration was not reloaded; the running one stays:\n  a.cfg:2.1-6: unrecognized keyword \"Deamon\"\n  a.cfg:5.9: no listeners defined\n", calls: "Reload"},
		{name: "reload endpoint missing", args: []string{"reload"}, noReload: true, code: 1, errHas: "no reload endpoint (PATCH /config)"},
		{name: "backend add needs zproxy", args: []string{"backend", "add", "/1/0", "10.0.0.5:80"}, code: 1, errHas: "the Pound control API cannot add backends"},
		{name: "version", args: []string{"version"}, outHas: []string{"lbctl: " + Version + "\n", "server: 9.9.9 (pid 4242) on "}},
		{name: "dialect forced", args: []string{"--dialect", "zproxy", "list"}, code: 1, errHas: "lbctl: no such endpoint: GET /listeners\n"},
	}
	runCases(t, cases, func(t *testing.T, tc cmdCase) (string, *fakeController) {
		return poundServer(t, !tc.noReload)
	})
}
