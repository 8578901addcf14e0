package functionaltests

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lbexplain "lbd/explain"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

// routeJSON runs lbctl route -j on sock and returns its raw output.
func routeJSON(t *testing.T, sock string, args ...string) []byte {
	t.Helper()
	out, errOut, code := lbctlRun(t, "lbctl", nil, append([]string{"-s", sock, "route", "-j"}, args...)...)
	if code != 0 {
		t.Fatalf("lbctl route %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return []byte(out)
}

// explainVia runs lbctl route -j on sock and decodes the explanation.
func explainVia(t *testing.T, sock string, args ...string) *lbexplain.Route {
	t.Helper()
	var r lbexplain.Route
	if err := json.Unmarshal(routeJSON(t, sock, args...), &r); err != nil {
		t.Fatalf("route %s: %v", strings.Join(args, " "), err)
	}
	return &r
}

// verdicts lists each service's "name=verdict".
func verdicts(r *lbexplain.Route) string {
	var out []string
	for _, s := range r.Services {
		out = append(out, s.Name+"="+s.Verdict)
	}
	return strings.Join(out, " ")
}

// stepsText lists the conditions of service i as "holds|fails test".
func stepsText(r *lbexplain.Route, i int) string {
	return stepsLines(r.Services[i].Conditions)
}

func stepsLines(steps []lbexplain.Step) string {
	var out []string
	for _, s := range steps {
		if s.Action != "" {
			out = append(out, "do "+s.Action)
			continue
		}
		v := "fails"
		if s.Holds != nil && *s.Holds {
			v = "holds"
		}
		line := v + " " + s.Test
		if len(s.Eval) > 0 {
			line += " {" + strings.ReplaceAll(stepsLines(s.Eval), "\n", "; ") + "}"
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// checkRouteGolden compares an explanation with testdata/route/name
// after replacing what changes from run to run (ports, the temporary
// directory), given as pairs old, new applied in order; -update rewrites
// the file.
func checkRouteGolden(t *testing.T, name string, got []byte, repl ...string) {
	t.Helper()
	s := strings.NewReplacer(repl...).Replace(string(got))
	path := filepath.Join("testdata", "route", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if s != string(want) {
		t.Errorf("%s differs from the golden file:\n%s", name, lineDiff(string(want), s))
	}
}

// lineDiff shows the first differing lines of two texts.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, a, b)
		}
	}
	return "(same lines)"
}

// getBody fetches url and returns status and body.
func getBody(t *testing.T, url string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(bytes.TrimSpace(b))
}
