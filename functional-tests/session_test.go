package functionaltests

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sessionConfig is one service over backends with the given Session block.
func sessionConfig(session string, backends ...*backend) string {
	return balancedSessionConfig("", session, backends...)
}

// balancedSessionConfig is sessionConfig with a Balancer statement
// ("" = Pound's default, weighted random).
func balancedSessionConfig(balancer, session string, backends ...*backend) string {
	var b strings.Builder
	b.WriteString("Daemon 0\nLogLevel 0\nAlive 1\nListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tService\n")
	if balancer != "" {
		b.WriteString("\t\tBalancer " + balancer + "\n")
	}
	for _, be := range backends {
		b.WriteString(be.block())
	}
	b.WriteString("\t\tSession\n" + session + "\t\tEnd\n\tEnd\nEnd\n")
	return b.String()
}

// fetch sends one request and returns the backend that answered.
func fetch(t *testing.T, addr, path string, hdr map[string]string) (string, *http.Response) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	for k, v := range hdr {
		if k == "Authorization" {
			req.Header[k] = []string{v}
			continue
		}
		req.Header.Add(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Header.Get("X-Backend"), resp
}

// pinned asserts that 12 requests with the same key land on one backend,
// and that the 6 keys are spread over all three backends. The service
// balances with iwrr, so only the first request of each key is a pick
// and those picks go round the backends in turn: the spread is certain
// (with random picks all six keys fell on one backend one run in 240),
// and a session ignored sends the key's next request elsewhere at once.
func pinned(t *testing.T, addr string, req func(key string) (string, map[string]string)) {
	t.Helper()
	used := map[string]bool{}
	for k := 0; k < 6; k++ {
		key := fmt.Sprintf("key%d", k)
		path, hdr := req(key)
		first, _ := fetch(t, addr, path, hdr)
		for i := 0; i < 12; i++ {
			if got, _ := fetch(t, addr, path, hdr); got != first {
				t.Fatalf("key %s: request %d went to %s, session pinned to %s", key, i, got, first)
			}
		}
		used[first] = true
	}
	if len(used) != 3 {
		t.Fatalf("the keys went to %v, want all three backends: the test would not notice sessions being ignored", used)
	}
}

func threeBackends(t *testing.T) []*backend {
	return []*backend{
		startBackend(t, "127.0.0.2", "a", echoHandler("a")),
		startBackend(t, "127.0.0.3", "b", echoHandler("b")),
		startBackend(t, "127.0.0.4", "c", echoHandler("c")),
	}
}

func TestSessionTypes(t *testing.T) {
	bes := threeBackends(t)
	cases := []struct {
		name    string
		session string
		req     func(key string) (string, map[string]string)
	}{
		{"cookie exact name among others", "\t\t\tType COOKIE\n\t\t\tID \"sid\"\n\t\t\tTTL 60\n",
			func(k string) (string, map[string]string) {
				return "/", map[string]string{"Cookie": "xsid=zzz; sid=" + k + "; theme=dark"}
			}},
		{"url parameter exact name", "\t\t\tType URL\n\t\t\tID \"sid\"\n\t\t\tTTL 60\n",
			func(k string) (string, map[string]string) { return "/p?xsid=1&sid=" + k + "&sid2=9", nil }},
		{"header", "\t\t\tType HEADER\n\t\t\tID \"X-Session\"\n\t\t\tTTL 60\n",
			func(k string) (string, map[string]string) { return "/", map[string]string{"X-Session": k} }},
		{"basic", "\t\t\tType BASIC\n\t\t\tTTL 60\n",
			func(k string) (string, map[string]string) {
				return "/", map[string]string{"Authorization": "Basic " + k}
			}},
		{"parm", "\t\t\tType PARM\n\t\t\tTTL 60\n",
			func(k string) (string, map[string]string) { return "/x;" + k, nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := startLBD(t, balancedSessionConfig("iwrr", tc.session, bes...))
			pinned(t, p.addr, tc.req)
		})
	}
}

func TestSessionIPPinsClient(t *testing.T) {
	bes := threeBackends(t)
	p := startLBD(t, sessionConfig("\t\t\tType IP\n\t\t\tTTL 60\n", bes...))
	first, _ := fetch(t, p.addr, "/", nil)
	for i := 0; i < 20; i++ {
		if got, _ := fetch(t, p.addr, "/", nil); got != first {
			t.Fatalf("request %d from the same IP went to %s, pinned to %s", i, got, first)
		}
	}
}

func TestSessionLearnedFromResponseCookie(t *testing.T) {
	mk := func(name string) *backend {
		return startBackend(t, "127.0.0.2", name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Backend", name)
			if r.URL.Path == "/login" {
				http.SetCookie(w, &http.Cookie{Name: "sid", Value: "u-" + r.URL.Query().Get("u")})
			}
		}))
	}
	bes := []*backend{mk("a"), mk("b"), mk("c")}
	p := startLBD(t, sessionConfig("\t\t\tType COOKIE\n\t\t\tID \"sid\"\n\t\t\tTTL 60\n", bes...))
	for u := 0; u < 6; u++ {
		owner, _ := fetch(t, p.addr, fmt.Sprintf("/login?u=%d", u), nil)
		for i := 0; i < 8; i++ {
			got, _ := fetch(t, p.addr, "/", map[string]string{"Cookie": fmt.Sprintf("sid=u-%d", u)})
			if got != owner {
				t.Fatalf("user %d: went to %s, but %s set the cookie", u, got, owner)
			}
		}
	}
}

func TestCookieInsert(t *testing.T) {
	bes := threeBackends(t)
	p := startLBD(t, sessionConfig("\t\t\tType COOKIEINSERT\n\t\t\tID \"lbid\"\n\t\t\tTTL 120\n\t\t\tPath \"/\"\n", bes...))
	owner, resp := fetch(t, p.addr, "/", nil)
	sc := resp.Header.Get("Set-Cookie")
	if !strings.HasPrefix(sc, "lbid=4-7f0000") || !strings.Contains(sc, "Max-Age=120") || !strings.Contains(sc, "Path=/") {
		t.Fatalf("Set-Cookie %q", sc)
	}
	cookie := strings.SplitN(sc, ";", 2)[0]
	for i := 0; i < 12; i++ {
		if got, _ := fetch(t, p.addr, "/", map[string]string{"Cookie": cookie}); got != owner {
			t.Fatalf("request %d with %s went to %s, want %s", i, cookie, got, owner)
		}
	}
}

func TestSessionRepinsWhenBackendDiesAndSurvivesReload(t *testing.T) {
	bes := threeBackends(t)
	cfg := sessionConfig("\t\t\tType HEADER\n\t\t\tID \"X-Session\"\n\t\t\tTTL 60\n", bes...)
	p := startLBD(t, cfg)
	hdr := map[string]string{"X-Session": "alice"}
	owner, _ := fetch(t, p.addr, "/", hdr)
	// A reload with the same service keeps the session table.
	written, err := os.ReadFile(p.cfg) // {PORT} already filled in
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.cfg, append([]byte("# reloaded\n"), written...), 0o644); err != nil {
		t.Fatal(err)
	}
	p.signal(syscall.SIGUSR1)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.out.String(), "configuration reloaded"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged:\n%s", p.out.String())
		}
	}
	for i := 0; i < 6; i++ {
		if got, _ := fetch(t, p.addr, "/", hdr); got != owner {
			t.Fatalf("after reload request %d went to %s, want %s", i, got, owner)
		}
	}
	for _, be := range bes {
		if be.name == owner {
			be.stop()
		}
	}
	next, resp := fetch(t, p.addr, "/", hdr)
	if resp.StatusCode != 200 || next == owner || next == "" {
		t.Fatalf("after %s died: status %d from %q", owner, resp.StatusCode, next)
	}
	for i := 0; i < 6; i++ {
		if got, _ := fetch(t, p.addr, "/", hdr); got != next {
			t.Fatalf("re-pinned session moved again: %s, want %s", got, next)
		}
	}
}
