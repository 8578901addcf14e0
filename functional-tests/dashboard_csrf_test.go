package functionaltests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDashboardCSRF sends the requests a cross-site attacker's browser
// could make to every place the dashboard is served (the control
// socket, a Dashboard service, lbctl dashboard's port): each is refused
// with 403 and the whole API state is the same afterwards; the page's
// own request, with the token, works.
func TestDashboardCSRF(t *testing.T) {
	a := startBackend(t, "127.0.0.2", "a", echoHandler("a"))
	b := startBackend(t, "127.0.0.3", "b", echoHandler("b"))
	p := startLBD(t, fmt.Sprintf(dashConfig, a.block()+b.block()))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	lbctlURL := startDashboardLbctl(t, sock)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	web := &http.Client{Timeout: 5 * time.Second, Jar: jar}
	if resp, err := web.Get(lbctlURL); err != nil || resp.StatusCode != 200 {
		t.Fatalf("opening lbctl's URL: %v %v", resp, err)
	}
	lbctlBase := strings.SplitN(lbctlURL, "/?", 2)[0]
	targets := []struct {
		name   string
		client *http.Client
		base   string
	}{
		{"control socket", ctlClient(sock), "http://lbd/dashboard/"},
		{"Dashboard service", &http.Client{Timeout: 5 * time.Second}, "http://" + p.addr + "/lbd-dashboard/"},
		{"lbctl dashboard", web, lbctlBase + "/dashboard/"},
	}
	body := `{"listener":0,"service":2,"backend":1,"enabled":false}`
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			tok := fetchToken(t, tg.client, tg.base)
			attacks := []struct {
				name    string
				ctype   string
				headers map[string]string
			}{
				{"form post", "application/x-www-form-urlencoded", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}},
				{"text/plain post", "text/plain", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}},
				{"JSON without the token", "application/json", nil},
				{"a guessed token", "application/json", map[string]string{"X-LBD-Token": strings.Repeat("0", len(tok))}},
				{"the token from another site", "application/json", map[string]string{"X-LBD-Token": tok, "Origin": "http://evil.example"}},
				{"the token, cross-site fetch", "application/json", map[string]string{"X-LBD-Token": tok, "Sec-Fetch-Site": "cross-site"}},
			}
			before := apiState(t, sock, "")
			for _, at := range attacks {
				status, reply := postEnable(t, tg.client, tg.base, at.ctype, body, at.headers)
				if status != http.StatusForbidden {
					t.Errorf("%s: %d %s, want 403", at.name, status, reply)
				}
			}
			if after := apiState(t, sock, ""); !reflect.DeepEqual(before, after) {
				t.Fatalf("a refused request changed the state")
			}
			status, reply := postEnable(t, tg.client, tg.base, "application/json", body, map[string]string{"X-LBD-Token": tok})
			if status != 200 || apiBackend(t, sock, 1)["enabled"] != false {
				t.Fatalf("the page's own request: %d %s", status, reply)
			}
			on := strings.Replace(body, "false", "true", 1)
			if status, reply := postEnable(t, tg.client, tg.base, "application/json", on, map[string]string{"X-LBD-Token": tok}); status != 200 {
				t.Fatalf("re-enable: %d %s", status, reply)
			}
		})
	}
	// Without the cookie lbctl's URL gave, lbctl's port serves nothing.
	status, _ := getBody(t, lbctlBase+"/dashboard/api/state")
	if status != http.StatusForbidden {
		t.Errorf("lbctl dashboard without its key: %d, want 403", status)
	}
}

func fetchToken(t *testing.T, c *http.Client, base string) string {
	t.Helper()
	resp, err := c.Get(base + "api/token")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Token == "" {
		t.Fatalf("api/token: %d %v", resp.StatusCode, err)
	}
	return v.Token
}

func postEnable(t *testing.T, c *http.Client, base, ctype, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"api/enable", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(reply)
}
