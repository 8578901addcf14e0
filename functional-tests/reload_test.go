package functionaltests

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unixClient talks HTTP over the control socket at path.
func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}

func control(t *testing.T, c *http.Client, method, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://localhost"+path, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReloadOverControlSocket reloads through PATCH /config: a good new
// file takes effect without dropping the listener, a broken one is
// refused and the running configuration keeps serving.
func TestReloadOverControlSocket(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	base := "Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n"
	first := base + "\tService\n" + a.block() + "\tEnd\nEnd\n"
	p := startLBD(t, first)
	ctl := unixClient(filepath.Join(p.dir, "ctl.sock"))
	if _, body := get(t, http.DefaultClient, "http://"+p.addr+"/"); !strings.HasPrefix(body, "a ") {
		t.Fatalf("before reload: %q", body)
	}
	cfgText, _ := os.ReadFile(p.cfg)
	second := strings.Replace(string(cfgText), a.block(), b.block(), 1)
	if err := os.WriteFile(p.cfg, []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := control(t, ctl, "PATCH", "/config"); code != 200 || strings.TrimSpace(body) != "true" {
		t.Fatalf("reload: %d %q", code, body)
	}
	if _, body := get(t, http.DefaultClient, "http://"+p.addr+"/"); !strings.HasPrefix(body, "b ") {
		t.Fatalf("after reload: %q", body)
	}
	if err := os.WriteFile(p.cfg, []byte(second+"Bogus directive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := control(t, ctl, "PATCH", "/config"); code != 400 {
		t.Fatalf("broken reload answered %d, want 400", code)
	}
	if _, body := get(t, http.DefaultClient, "http://"+p.addr+"/"); !strings.HasPrefix(body, "b ") {
		t.Fatalf("after refused reload: %q", body)
	}
	waitLog(t, p, "unrecognized keyword", 5*time.Second) // the refused reload's reason
}
