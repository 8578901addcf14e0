package functionaltests

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMetricsAndControlBackends(t *testing.T) {
	be := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	cfg := "Daemon 0\nLogLevel 0\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\txHTTP 1\n" +
		"\tService\n\t\tURL \"^/metrics$\"\n\t\tMetrics\n\tEnd\n" +
		"\tService\n\t\tURL \"^/(core|listener)\"\n\t\tControl\n\tEnd\n" +
		"\tService\n" + be.block() + "\tEnd\nEnd\n"
	p := startLBD(t, cfg)
	get(t, http.DefaultClient, "http://"+p.addr+"/traffic")

	resp, body := get(t, http.DefaultClient, "http://"+p.addr+"/metrics")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text") {
		t.Fatalf("metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"pound_listener_enabled", "pound_backend_state", "# EOF"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	resp, body = get(t, http.DefaultClient, "http://"+p.addr+"/core")
	if resp.StatusCode != 200 || !strings.Contains(body, `"kind": "core"`) && !strings.Contains(body, `"kind":"core"`) {
		t.Fatalf("control /core: %d %s", resp.StatusCode, body)
	}
	// Disable the regular backend through the Control backend over TCP.
	req, _ := http.NewRequest("DELETE", "http://"+p.addr+"/listener/0/2/0", nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || strings.TrimSpace(string(b)) != "true" {
		t.Fatalf("disable via Control backend: %d %s", r.StatusCode, b)
	}
	if resp, _ := get(t, http.DefaultClient, "http://"+p.addr+"/traffic"); resp.StatusCode != 503 {
		t.Fatalf("after disabling the only backend: %d, want 503", resp.StatusCode)
	}
}
