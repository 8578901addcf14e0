package functionaltests

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The dashboard's timeline and graphs as the sampler keeps them,
// read from the control socket's api/history: a TBF condition that
// starts refusing is an event, and the graphs' p50/p99 come from the
// service's duration histogram.

type timelineHistory struct {
	Series map[string]struct {
		RPS []float64 `json:"rps"`
		P50 []float64 `json:"p50_ms"`
		P99 []float64 `json:"p99_ms"`
	} `json:"series"`
	Events []struct {
		Kind   string `json:"kind"`
		Object string `json:"object"`
		Detail string `json:"detail"`
	} `json:"events"`
}

func readHistory(t *testing.T, sock string) timelineHistory {
	t.Helper()
	resp, err := ctlClient(sock).Get("http://lbd/dashboard/api/history?events=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var h timelineHistory
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("api/history: %v: %s", err, body)
	}
	return h
}

func TestTimelineTBFAndHistogramPercentiles(t *testing.T) {
	a := echoBackend(t, "a")
	p := startLBD(t, fmt.Sprintf(`Control "{DIR}/ctl.sock"
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "limited"
		Not TBF "%%[header X-Api-Key]" 1/60s 2
		Error 429
	End
	Service "web"
		%s
	End
End
`, backendBlock(a)))
	sock := filepath.Join(p.dir, "ctl.sock")
	for i := range 6 {
		status, _ := limitGet(t, p, "/", "X-Api-Key: flood")
		if want := map[bool]int{true: 200, false: 429}[i < 2]; status != want {
			t.Fatalf("request %d: status %d, want %d", i, status, want)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		// A request of a fresh key each round reaches "web", so its
		// graph has requests after the sampler's first (baseline) point
		// however late that came.
		if status, _ := limitGet(t, p, "/", fmt.Sprintf("X-Api-Key: probe-%d", i)); status != 200 {
			t.Fatalf("a fresh key: status %d, want 200", status)
		}
		h := readHistory(t, sock)
		var found string
		for _, ev := range h.Events {
			if ev.Kind == "tbf" {
				found = ev.Object + ": " + ev.Detail
			}
		}
		// The "web" service (listener 0, service 1) answered the two
		// requests that got a token: its points have a p50 > 0.
		var p50 float64
		for _, v := range h.Series["0/1"].P50 {
			p50 = max(p50, v)
		}
		if found != "" && p50 > 0 {
			if !strings.Contains(found, `TBF 0 (%[header X-Api-Key]) of service "limited": refusing requests: `) {
				t.Errorf("tbf event %q", found)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: tbf event %q, web p50 %v; history %+v", found, p50, h)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
