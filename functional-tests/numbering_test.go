package functionaltests

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestListenerNumbersAgree: on each socket, the number lbctl list prints
// for a listener is the one lbctl route -l takes and answers with, and
// the one the dashboard shows (the Pound socket counts its control
// socket as listener 0, the zproxy socket does not).
func TestListenerNumbersAgree(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	zsock := filepath.Join(t.TempDir(), "z.sock")
	p := startLBD(t, "Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\n"+
		"ListenHTTP \"main\"\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n"+a.block()+"\tEnd\nEnd\n", "-C", zsock)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	waitSocket(t, zsock)
	for _, tc := range []struct {
		name, sock string
		number     int
	}{
		{name: "Pound socket", sock: sock, number: 1},
		{name: "zproxy socket", sock: zsock, number: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			num := fmt.Sprint(tc.number)
			out, errOut, code := lbctlRun(t, "lbctl", nil, "-s", tc.sock, "-q", "list", "/"+num)
			if code != 0 || !strings.HasPrefix(out, "/"+num+"\n") {
				t.Fatalf("list /%s: %d %q %q", num, code, out, errOut)
			}
			if r := explainVia(t, tc.sock, "-l", num, "GET", "/"); r.Listener.Index != tc.number || r.Listener.Name != "main" {
				t.Errorf("route -l %s: listener %+v", num, r.Listener)
			}
			if r := explainVia(t, tc.sock, "GET", "/"); r.Listener.Index != tc.number {
				t.Errorf("route: listener %+v, want number %d", r.Listener, tc.number)
			}
			resp, err := ctlClient(tc.sock).Get("http://lbd/dashboard/api/state")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Listeners []struct {
					Number int    `json:"number"`
					Name   string `json:"name"`
				} `json:"listeners"`
			}
			if err := json.Unmarshal(body, &st); err != nil || len(st.Listeners) != 1 || st.Listeners[0].Number != tc.number {
				t.Errorf("dashboard state %s (%v), want listener number %d", body, err, tc.number)
			}
		})
	}
}
