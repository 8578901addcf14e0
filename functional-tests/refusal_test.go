package functionaltests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// refusalConfig has a Control socket and one service without sessions.
const refusalConfig = "Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\n" +
	"ListenHTTP \"main\"\n\tAddress 127.0.0.1\n\tPort {PORT}\n" +
	"\tService \"plain\"\n%s\tEnd\nEnd\n"

// brokenConfig has two errors, both of which a refused reload reports.
const brokenConfig = "ListenHTTP\n\tAdress 127.0.0.1\n\tPort 1\n\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.2\n\t\t\tPort 99999\n\t\tEnd\n\tEnd\nEnd\n"

// TestRefusalReasons: lbctl prints why the running lbd refused each kind
// of request (and exits 1), on both sockets; as poundctl it prints
// Pound's status text.
func TestRefusalReasons(t *testing.T) {
	one := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	zsock := filepath.Join(t.TempDir(), "z.sock")
	p := startLBD(t, fmt.Sprintf(refusalConfig, one.block()), "-C", zsock)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	waitSocket(t, zsock)
	s, z := []string{"-s", sock}, []string{"-s", zsock}
	runSteps(t, []lbctlStep{
		{name: "unknown listener", args: append(s, "list", "/7"), code: 1, errHas: "lbctl: listener 7 not found\n"},
		{name: "unknown backend", args: append(s, "disable", "/1/0/7"), code: 1,
			errHas: "lbctl: backend 7 not found in service 0 of listener 1 (backends are numbered by index, 0 to 0)\n"},
		{name: "control socket", args: append(s, "off", "/0"), code: 1,
			errHas: "lbctl: listener 0 is the control socket itself: it cannot be changed\n"},
		{name: "poundctl: status text", prog: "poundctl", args: append(s, "off", "/0"), code: 1, errHas: "poundctl: Bad Request\n"},
		{name: "session on a service without sessions", args: append(s, "add", "/1/plain/0", "k"), code: 1,
			errHas: "lbctl: /session/1/plain/0: service has no sessions\n"},
		{name: "zproxy: session on a service without sessions", args: append(z, "add", "/0/plain/0", "k"), code: 1,
			errHas: "lbctl: Invalid request: service has no sessions.\n"},
		{name: "unknown log format", args: append(s, "log", "/1", "fancy"), code: 1, errHas: "lbctl: log format \"fancy\""},
		{name: "not a cluster member", args: append(s, "cluster"), code: 1, errHas: "not in a cluster"},
	})
	if err := os.WriteFile(p.cfg, []byte(brokenConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := "  " + p.cfg + ":2.9-14: unrecognized keyword \"Adress\"; did you mean \"Address\"?\n" +
		"  " + p.cfg + ":7.30-34: value out of range [1..65535]\n"
	runSteps(t, []lbctlStep{
		{name: "reload lists every error", args: append(s, "reload"), code: 1,
			errHas: "lbctl: the configuration was not reloaded; the running one stays:\n" + errs},
		{name: "zproxy: reload lists every error", args: append(z, "reload"), code: 1,
			errHas: "lbctl: Failed to reload configuration:\n" + errs},
		{name: "still serving the old configuration", args: append(s, "-q", "list", "/1/0"), outHas: []string{"/1/0\n/1/0/0\n"}},
	})
}

// TestRefusalNegotiated: on the Pound socket a client that accepts JSON
// gets the reason, any other Pound's HTML page, with the same status.
func TestRefusalNegotiated(t *testing.T) {
	p := startLBD(t, fmt.Sprintf(refusalConfig, "\t\tBackEnd\n\t\t\tAddress 127.0.0.2\n\t\t\tPort 9\n\t\tEnd\n"))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	for _, tc := range []struct {
		name, accept, ctype, body string
	}{
		{name: "JSON", accept: "application/json", ctype: "application/json",
			body: `{"result":"error","reason":"listener 9 not found"}` + "\n"},
		{name: "HTML", accept: "", ctype: "text/html", body: "<!DOCTYPE HTML PUBLIC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", "http://localhost/listener/9", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != tc.ctype || !strings.HasPrefix(string(b), tc.body) {
				t.Errorf("%d %s %q, want 404 %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.ctype, tc.body)
			}
		})
	}
}
