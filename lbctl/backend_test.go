package lbctl

import (
	"net/http"
	"strings"
	"testing"
)

// The fixture's backend /1/0/0 (Pound) or /0/0/0 (zproxy) after its
// Priority was set to 9: the row lbctl prints after the change.
const (
	poundBackendRow = `PATH    TYPE     NAME  ADDRESS             STATE   PRIORITY  GROUP  CONNS  REQUESTS  LATENCY  SESSIONS
/1/0/0  backend  -     http://10.0.0.1:80  active  9         0      -      14        1.5ms    -
`
	zproxyBackendRow = `PATH    TYPE     NAME         ADDRESS             STATE   PRIORITY  WEIGHT  CONNS  REQUESTS  LATENCY  SESSIONS
/0/0/0  backend  10.0.0.1-80  http://10.0.0.1:80  active  9         2       3      14        1.5ms    -
`
	// The web service without its backend 1 (and the session pinned
	// to it, which the fake keeps: the engine drops it).
	poundWebAfterRemove = `PATH    TYPE     NAME  ADDRESS             STATE    PRIORITY  GROUP  CONNS  REQUESTS  LATENCY  SESSIONS
/1/0    service  web   -                   enabled  -         -      -      -         -        1
/1/0/0  backend  -     http://10.0.0.1:80  active   5         0      -      14        1.5ms    -
/1/0/1  backend  -     http://10.0.0.9:80  dead     1         65535  -      0         -        -
`
	zproxyWebAfterRemove = `PATH      TYPE     NAME         ADDRESS             STATE    PRIORITY  WEIGHT  CONNS  REQUESTS  LATENCY  SESSIONS
/0/web    service  web          -                   enabled  -         -       -      -         -        1
/0/web/0  backend  10.0.0.1-80  http://10.0.0.1:80  active   5         2       3      14        1.5ms    -
/0/web/1  backend  10.0.0.9-80  http://10.0.0.9:80  dead     1         1       0      0         -        -
`
)

func TestBackendEditsPound(t *testing.T) {
	cases := []cmdCase{
		{name: "weight", args: []string{"weight", "/1/0/0", "9"}, calls: "SetBackend 0/0/0 w9 p- c-", out: poundBackendRow},
		{name: "backend weight by names", args: []string{"backend", "weight", "/main/web/0", "9"}, calls: "SetBackend 0/0/0 w9 p- c-",
			outHas: []string{"\n/main/web/0  backend  -     http://10.0.0.1:80  active  9         0      -      14        1.5ms    -\n"}},
		{name: "priority", args: []string{"priority", "/1/0/0", "9"}, calls: "SetBackend 0/0/0 w- p9 c-", out: poundBackendRow},
		{name: "connlimit quiet", args: []string{"-q", "backend", "connlimit", "/1/0/0", "20"}, calls: "SetBackend 0/0/0 w- p- c20"},
		{name: "global backend json", args: []string{"-j", "backend", "priority", "/-/0/0", "3"}, calls: "SetBackend -1/0/0 w- p3 c-",
			outHas: []string{`"address":"10.0.1.1:8080"`, `"priority":3`}},
		{name: "out of range", args: []string{"weight", "/1/0/0", "70000"}, code: 1, calls: "SetBackend 0/0/0 w70000 p- c-",
			errHas: "lbctl: weight 70000 out of range 0-65535\n"},
		{name: "not a number", args: []string{"weight", "/1/0/0", "heavy"}, code: 1, errHas: `lbctl: bad weight "heavy": want a number`},
		{name: "needs a backend", args: []string{"weight", "/1/0", "3"}, code: 1, errHas: "bad uri: backend not specified"},
		{name: "needs a value", args: []string{"priority", "/1/0/0"}, code: 1, errHas: "required argument missing"},
		{name: "unknown backend", args: []string{"weight", "/1/0/7", "3"}, code: 1, errHas: "lbctl: backend 7 not found in service 0 of listener 1 (backends are numbered by index, 0 to 2)\n"},
		{name: "remove", args: []string{"backend", "remove", "/1/0/1"}, calls: "RemoveBackend 0/0/1", out: poundWebAfterRemove},
		{name: "rm quiet", args: []string{"-q", "backend", "rm", "/main/web/1"}, calls: "RemoveBackend 0/0/1"},
		{name: "remove a service", args: []string{"backend", "remove", "/1/0"}, code: 1, errHas: "bad uri: backend not specified"},
		{name: "remove the control backend", args: []string{"backend", "rm", "/0/0/0"}, code: 1,
			errHas: "lbctl: the control socket's backend cannot be changed\n"},
	}
	runCases(t, cases, func(t *testing.T, tc cmdCase) (string, *fakeController) {
		return poundServer(t, true)
	})
}

func TestBackendEditsZproxy(t *testing.T) {
	cases := []cmdCase{
		{name: "weight", args: []string{"weight", "/0/0/0", "9"}, calls: "SetBackend 0/0/0 w9 p- c-", out: zproxyBackendRow},
		{name: "by id", args: []string{"backend", "priority", "/0/web/10.0.0.1-80", "9"}, calls: "SetBackend 0/0/0 w- p9 c-",
			outHas: []string{"\n/0/web/10.0.0.1-80  backend  10.0.0.1-80  http://10.0.0.1:80  active  9         2       3      14        1.5ms    -\n"}},
		{name: "json", args: []string{"-j", "backend", "connlimit", "/0/0/0", "5"}, calls: "SetBackend 0/0/0 w- p- c5", out: "{\"result\":\"ok\"}\n"},
		{name: "out of range", args: []string{"weight", "/0/0/0", "70000"}, code: 1, calls: "SetBackend 0/0/0 w70000 p- c-",
			errHas: "lbctl: Invalid value: weight 70000 out of range 0-65535.\n"},
		{name: "unknown backend", args: []string{"weight", "/0/web/9", "1"}, code: 1, errHas: "Backend 9 in service web in listener 0 not found."},
		{name: "listener by name", args: []string{"weight", "/main/web/0", "1"}, code: 1, errHas: "addresses listeners by number"},
		{name: "remove", args: []string{"backend", "remove", "/0/web/1"}, calls: "RemoveBackend 0/0/1", out: zproxyWebAfterRemove},
		{name: "remove json", args: []string{"-j", "backend", "rm", "/0/0/10.0.0.2-80"}, calls: "RemoveBackend 0/0/1", out: "{\"result\":\"ok\"}\n"},
	}
	runCases(t, cases, func(t *testing.T, tc cmdCase) (string, *fakeController) {
		return zproxyServer(t)
	})
}

// TestBackendEditsOnOtherServers: a server without the endpoints (Pound,
// zproxy, an older lbd) gets a message that says so.
func TestBackendEditsOnOtherServers(t *testing.T) {
	refuse := func(status int, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/core" { // seen as a Pound socket
				w.Write([]byte(`{"kind":"core"}`))
				return
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
		})
	}
	for _, tc := range []struct {
		name    string
		h       http.Handler
		dialect string
	}{
		{name: "pound 405", h: refuse(http.StatusMethodNotAllowed, "<html>Method Not Allowed</html>")},
		{name: "zproxy bare 400", h: refuse(http.StatusBadRequest, ""), dialect: "zproxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := serve(t, tc.h)
			argv := []string{"lbctl", "-s", sock}
			if tc.dialect != "" {
				argv = append(argv, "--dialect", tc.dialect)
			}
			for _, cmd := range [][]string{{"weight", "/1/0/0", "2"}, {"backend", "remove", "/1/0/0"}} {
				r := run(nil, append(argv, cmd...)...)
				if r.code != 1 || !strings.Contains(r.stderr, "this server cannot change or remove backends") {
					t.Errorf("%v: exit %d, stderr %q", cmd, r.code, r.stderr)
				}
			}
		})
	}
}
