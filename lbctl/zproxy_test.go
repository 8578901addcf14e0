package lbctl

import (
	"errors"
	"fmt"
	"testing"
)

// zproxyTable is lbctl's table for the fixture on the zproxy socket:
// listeners from 0, backend ids, live connections and weights; a
// redirect service lists no backends, as in zproxy's API.
const zproxyTable = `PATH    TYPE      NAME         ADDRESS                STATE     PRIORITY  WEIGHT  CONNS  REQUESTS  LATENCY  SESSIONS
/0      listener  main         http://127.0.0.1:8080  enabled   -         -       4      -         -        -
/0/0    service   web          -                      enabled   -         -       -      -         -        1
/0/0/0  backend   10.0.0.1-80  http://10.0.0.1:80     active    5         2       3      14        1.5ms    -
/0/0/1  backend   10.0.0.2-80  http://10.0.0.2:80     disabled  5         1       0      0         -        -
/0/0/2  backend   10.0.0.9-80  http://10.0.0.9:80     dead      1         1       0      0         -        -
/0/1    service   -            -                      enabled   -         -       -      -         -        0
`

// zproxyListing is the default template on the converted zproxy listing.
const zproxyListing = `
Listeners:

  0. Listener "main" http://127.0.0.1:8080 enabled
     0. Service "web" active
        0. backend (2) http 10.0.0.1:80 5 alive active
        1. backend (1) http 10.0.0.2:80 5 dead disabled
        2. backend (1) http 10.0.0.9:80 1 dead active
     Session type: -
       0. Session abc 1 
     1. Service active
     Session type: -
`

// zWebTable is the table of service /0/web with %d sessions.
const zWebTable = `PATH      TYPE     NAME         ADDRESS             STATE     PRIORITY  WEIGHT  CONNS  REQUESTS  LATENCY  SESSIONS
/0/web    service  web          -                   enabled   -         -       -      -         -        %d
/0/web/0  backend  10.0.0.1-80  http://10.0.0.1:80  active    5         2       3      14        1.5ms    -
/0/web/1  backend  10.0.0.2-80  http://10.0.0.2:80  disabled  5         1       0      0         -        -
/0/web/2  backend  10.0.0.9-80  http://10.0.0.9:80  dead      1         1       0      0         -        -
`

func TestZproxyDialect(t *testing.T) {
	cases := []cmdCase{
		{name: "lbctl table", out: zproxyTable},
		{name: "poundctl default listing", prog: "poundctl", out: zproxyListing},
		{name: "list service by name", args: []string{"list", "/0/web"}, out: fmt.Sprintf(zWebTable, 1)},
		{name: "list raw json", args: []string{"-j", "list", "/0/web/0"}, outHas: []string{`"id": "10.0.0.1-80",`, `"weight": 2`}},
		{name: "list listener by name", args: []string{"list", "/main"}, code: 1, errHas: "addresses listeners by number"},
		{name: "list global services", args: []string{"list", "/-/0"}, code: 1, errHas: "addresses listeners by number"},
		{name: "list unknown service", args: []string{"list", "/0/nope"}, code: 1, errHas: "lbctl: Service nope in listener 0 not found.\n"},
		{name: "disable backend by id", args: []string{"disable", "/0/web/10.0.0.2-80"}, calls: "SetEnabled 0/0/1 false"},
		{name: "enable backend by index", args: []string{"-j", "on", "/0/web/1"}, out: "{\"result\":\"ok\"}\n", calls: "SetEnabled 0/0/1 true"},
		{name: "disable service refused", args: []string{"disable", "/0/web"}, code: 1, errHas: "only backends can be enabled or disabled"},
		{name: "disable unknown backend", args: []string{"disable", "/0/web/9"}, code: 1, errHas: "lbctl: Backend 9 in service web in listener 0 not found.\n"},
		{name: "core refused", args: []string{"core"}, code: 1, errHas: "core: not available on the zproxy control socket"},
		{name: "log refused", args: []string{"log"}, code: 1, errHas: "log: not available on the zproxy control socket"},
		{name: "metrics refused", args: []string{"metrics"}, code: 1, errHas: "metrics: not available on the zproxy control socket"},
		{name: "add session", args: []string{"add", "/0/web/0", "k1"}, calls: "AddSession 0/0 k1->0", out: fmt.Sprintf(zWebTable, 2)},
		{name: "add existing session", args: []string{"-q", "add", "/0/web/10.0.0.1-80", "abc"}, calls: "MoveSession 0/0 abc->1"},
		{name: "add unknown backend", args: []string{"add", "/0/web/7", "k"}, code: 1, errHas: "Backend 7 in service web in listener 0 not found."},
		{name: "delete session", args: []string{"delete", "/0/web", "abc"}, calls: "DeleteSession 0/0 abc", out: fmt.Sprintf(zWebTable, 0)},
		{name: "delete unknown session", args: []string{"del", "/0/web", "nokey"}, code: 1, errHas: "Could not find session with ID nokey"},
		{name: "session list", args: []string{"session", "list"},
			out: "SERVICE  KEY  BACKEND          EXPIRES  LAST-SEEN\n/0/0     abc  1 (10.0.0.2-80)  -        2026-11-30T05:40:00Z\n"},
		{name: "session flush service", args: []string{"session", "flush", "/0/web"}, calls: "FlushSessions 0/0/-1"},
		{name: "session flush backend", args: []string{"session", "flush", "/0/web/10.0.0.2-80"}, calls: "FlushSessions 0/0/1"},
		{name: "backend add", args: []string{"backend", "add", "--weight", "3", "--priority", "2", "/0/web", "10.0.0.7:8080"},
			calls: "AddBackend 0/0 10.0.0.7:8080 w3 p2"},
		{name: "backend add defaults", args: []string{"-j", "backend", "add", "/0/1", "10.0.0.8:81"},
			calls: "AddBackend 0/1 10.0.0.8:81 w1 p1", out: "{\"result\":\"ok\"}\n"},
		{name: "backend add duplicate", args: []string{"backend", "add", "/0/web", "10.0.0.1:80"}, code: 1, errHas: "Backend 10.0.0.1-80 already exists."},
		{name: "backend add bad address", args: []string{"backend", "add", "/0/web", "10.0.0.1"}, code: 1, errHas: "bad backend address"},
		{name: "backend add bad port", args: []string{"backend", "add", "/0/web", "10.0.0.1:http"}, code: 1, errHas: "bad backend port"},
		{name: "backend add needs a service", args: []string{"backend", "add", "/0", "10.0.0.1:80"}, code: 1, errHas: "service not specified"},
		{name: "reload", args: []string{"reload"}, calls: "Reload"},
		{name: "reload refused", args: []string{"reload"}, setup: func(fc *fakeController) { fc.reloadErr = errors.New("bad") },
			code: 1, errHas: "lbctl: Failed to reload configuration:\n  bad\n", calls: "Reload"},
		{name: "version", args: []string{"version"}, outHas: []string{"lbctl: " + Version + "\n", "server: zproxy dialect on "}},
	}
	runCases(t, cases, func(t *testing.T, _ cmdCase) (string, *fakeController) { return zproxyServer(t) })
}
