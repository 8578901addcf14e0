package adminapi

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsFamilyFilter: GET /metrics?family=A&family=B writes exactly
// the samples of A and B that the full exposition has, in its order.
func TestMetricsFamilyFilter(t *testing.T) {
	h := NewPoundHandler(newFake())
	full := do(h, http.MethodGet, "/metrics", "").Body.String()
	rec := do(h, http.MethodGet, "/metrics?family=pound_backend_requests&family=lbd_backend_requests", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	var want []string
	sc := bufio.NewScanner(strings.NewReader(full))
	fam := ""
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			fam = strings.Fields(f)[0]
		}
		if fam == "pound_backend_requests" || fam == "lbd_backend_requests" || line == "# EOF" {
			want = append(want, line)
		}
	}
	got := strings.TrimRight(rec.Body.String(), "\n")
	if got != strings.Join(want, "\n") {
		t.Fatalf("filtered exposition:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if !strings.Contains(got, "pound_backend_requests_total{") {
		t.Fatalf("no backend sample in:\n%s", got)
	}
}
