package functionaltests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestSessionListPaged: a table of 2,500 sessions is listed by lbctl a
// page at a time (GET /listener/L/S/sessions, 1,000 a page) in key
// order, every key once, and lbctl list shows the count without the
// listing; the zproxy socket pages the same table.
func TestSessionListPaged(t *testing.T) {
	bes := threeBackends(t)
	cfg := "Control \"{DIR}/ctl.sock\"\n" + sessionConfig("\t\t\tType HEADER\n\t\t\tID \"X-Session\"\n\t\t\tTTL 600\n", bes...)
	zsock := filepath.Join(t.TempDir(), "z.sock")
	p := startLBD(t, cfg, "-C", zsock)
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, zsock)
	const n = 2500
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("client-%05d", i*7919%n))
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				req, err := http.NewRequest("GET", "http://"+p.addr+"/", nil)
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("X-Session", want[i])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(want)

	keys := strings.Fields(lbctlOK(t, sock, "-q", "session", "list", "/1/0"))
	if !slices.Equal(keys, want) {
		t.Fatalf("lbctl -q session list: %d keys, first %q, want the %d in key order", len(keys), keys[:min(3, len(keys))], n)
	}
	table := lbctlOK(t, sock, "session", "list", "/1/0")
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != n+1 || !slices.Equal(strings.Fields(lines[1])[:2], []string{"/1/0", want[0]}) {
		t.Errorf("lbctl session list: %d lines, first rows %q", len(lines), lines[:min(3, len(lines))])
	}
	if list := lbctlOK(t, sock, "list", "/1/0"); !strings.Contains(list, fmt.Sprint(n)) {
		t.Errorf("lbctl list does not show the %d sessions:\n%s", n, list)
	}

	// The zproxy socket: pages of 1,000 by ?limit and ?after.
	var got []string
	after := ""
	for range 4 {
		code, body := unixDo(t, zsock, "GET", "/listener/0/service/0/sessions?limit=1000&after="+after, "")
		var pg struct {
			Next     *string `json:"next"`
			Sessions []struct {
				ID string `json:"id"`
			} `json:"sessions"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &pg) != nil {
			t.Fatalf("zproxy page after %q: %d %s", after, code, body)
		}
		for _, s := range pg.Sessions {
			got = append(got, s.ID)
		}
		if pg.Next == nil {
			break
		}
		after = *pg.Next
	}
	if !slices.Equal(got, want) {
		t.Errorf("zproxy pages: %d keys, want the %d in order", len(got), n)
	}
}
