package adminapi

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsFamilyFilter: GET /metrics?family=A&family=B writes exactly
// the samples of A and B that the full exposition has, in its order; for
// every family alone too (the exposition skips building the labels of
// the families it does not write).
func TestMetricsFamilyFilter(t *testing.T) {
	h := NewPoundHandler(newFake())
	full := do(h, http.MethodGet, "/metrics", "").Body.String()
	tests := [][]string{{"pound_backend_requests", "lbd_backend_requests"}}
	for _, f := range metricFamilies {
		tests = append(tests, []string{f.name})
	}
	seen := 0
	for _, fams := range tests {
		t.Run(strings.Join(fams, ","), func(t *testing.T) {
			rec := do(h, http.MethodGet, "/metrics?family="+strings.Join(fams, "&family="), "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d", rec.Code)
			}
			want := familyLines(full, fams)
			got := strings.TrimRight(rec.Body.String(), "\n")
			if got != strings.Join(want, "\n") {
				t.Fatalf("filtered exposition:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
			if len(want) > 1 {
				seen++
			}
		})
	}
	if got := do(h, http.MethodGet, "/metrics?family=pound_backend_requests", "").Body.String(); !strings.Contains(got, "pound_backend_requests_total{") {
		t.Fatalf("no backend sample in:\n%s", got)
	}
	if seen < 10 {
		t.Errorf("only %d families have samples in the fake's exposition", seen)
	}
}

// familyLines are the lines of families fams in the exposition full,
// and its # EOF.
func familyLines(full string, fams []string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(full))
	fam := ""
	for sc.Scan() {
		line := sc.Text()
		if line == "# EOF" {
			return append(out, line)
		}
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			fam = strings.Fields(f)[0]
		}
		for _, f := range fams {
			if fam == f {
				out = append(out, line)
			}
		}
	}
	return out
}
