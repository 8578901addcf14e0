package adminapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// dialects are the handlers the dashboard and /route are served by.
func dialects(c Controller) map[string]http.Handler {
	return map[string]http.Handler{"pound": NewPoundHandler(c), "zproxy": NewZproxyHandler(c)}
}

func TestDashboardPage(t *testing.T) {
	for name, h := range dialects(newFake()) {
		t.Run(name, func(t *testing.T) {
			rec := do(h, http.MethodGet, "/dashboard", "")
			if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/dashboard/" {
				t.Fatalf("GET /dashboard: %d Location %q, want a 301 to /dashboard/", rec.Code, rec.Header().Get("Location"))
			}
			rec = do(h, http.MethodGet, "/dashboard/", "")
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
				t.Fatalf("GET /dashboard/: %d %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			page := rec.Body.String()
			csp := rec.Header().Get("Content-Security-Policy")
			for _, tag := range []string{"script", "style"} {
				m := regexp.MustCompile(`(?s)<` + tag + `>(.*?)</` + tag + `>`).FindStringSubmatch(page)
				if m == nil {
					t.Fatalf("no inline <%s>", tag)
				}
				sum := sha256.Sum256([]byte(m[1]))
				if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
					t.Errorf("the CSP %q does not allow the inline %s (%s)", csp, tag, want)
				}
			}
			// Nothing is fetched from anywhere: no URL with a scheme, no
			// src= or href= other than the empty data: icon. SVG's namespace
			// name is a URI that nothing fetches: the graphs need it.
			noNS := strings.ReplaceAll(page, `"http://www.w3.org/2000/svg"`, "")
			if regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).MatchString(noNS) {
				t.Errorf("the page refers to another host")
			}
			for _, m := range regexp.MustCompile(`(?i)\b(src|href)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1) {
				if m[2] != "data:," {
					t.Errorf("the page loads %s=%q", m[1], m[2])
				}
			}
			if rec.Header().Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("the page may be framed (clickjacking)")
			}
		})
	}
}

func TestDashboardState(t *testing.T) {
	f := newFake()
	check := func(name string, rec *httptest.ResponseRecorder) { // name: the golden file's dialect
		t.Helper()
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
		}
		var b bytes.Buffer
		if err := json.Indent(&b, rec.Body.Bytes(), "", "  "); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkGolden(t, "dashboard_state_"+name+".json", append(b.Bytes(), '\n'))
	}
	// Each socket's dashboard numbers the listeners as its listing does.
	for name, h := range dialects(f) {
		check(name, do(h, http.MethodGet, "/dashboard/api/state", ""))
	}
	// Under any prefix: the handler goes by the end of the path. A
	// Dashboard backend numbers listeners the Pound way.
	check("pound", do(NewDashboard(f), http.MethodGet, "/some/prefix/api/state", ""))
}

// TestDashboardCSRF checks every way a POST can lack the protection: none
// changes anything, and each is refused with 403 (or 415 for a form
// post that carries the token but is no JSON).
func TestDashboardCSRF(t *testing.T) {
	const body = `{"listener":0,"service":0,"backend":1,"enabled":false}`
	tok := DashboardToken()
	wrong := "0" + tok[1:]
	if wrong == tok { // a token starting with 0 (one run in 16)
		wrong = "1" + tok[1:]
	}
	cases := []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{name: "no token", headers: map[string]string{"Content-Type": "application/json"}, status: 403},
		{name: "wrong token", headers: map[string]string{"Content-Type": "application/json", TokenHeader: wrong}, status: 403},
		{name: "token, but another site's Origin", headers: map[string]string{"Content-Type": "application/json", TokenHeader: tok, "Origin": "http://evil.example"}, status: 403},
		{name: "token, but Origin null", headers: map[string]string{"Content-Type": "application/json", TokenHeader: tok, "Origin": "null"}, status: 403},
		{name: "token, but Sec-Fetch-Site cross-site", headers: map[string]string{"Content-Type": "application/json", TokenHeader: tok, "Sec-Fetch-Site": "cross-site"}, status: 403},
		{name: "token, but same-site is not same-origin", headers: map[string]string{"Content-Type": "application/json", TokenHeader: tok, "Sec-Fetch-Site": "same-site"}, status: 403},
		{name: "a form post", headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded", TokenHeader: tok}, status: 415},
		{name: "from the page", headers: map[string]string{"Content-Type": "application/json", TokenHeader: tok, "Origin": "http://example.com", "Sec-Fetch-Site": "same-origin"}, status: 200},
	}
	for dialect := range dialects(newFake()) {
		for _, tc := range cases {
			t.Run(dialect+"/"+tc.name, func(t *testing.T) {
				f := newFake()
				h := dialects(f)[dialect]
				req := httptest.NewRequest(http.MethodPost, "http://example.com/dashboard/api/enable", strings.NewReader(body))
				for k, v := range tc.headers {
					req.Header.Set(k, v)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.status {
					t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
				}
				changed := f.State().Listeners[0].Services[0].Backends[1].Enabled == false
				if changed != (tc.status == 200) {
					t.Fatalf("backend disabled: %v, want %v (calls %v)", changed, tc.status == 200, f.log())
				}
			})
		}
	}
}

func TestDashboardToken(t *testing.T) {
	h := NewDashboard(newFake())
	for _, tc := range []struct {
		site   string
		status int
	}{{"", 200}, {"same-origin", 200}, {"none", 200}, {"cross-site", 403}, {"same-site", 403}} {
		req := httptest.NewRequest(http.MethodGet, "/dashboard/api/token", nil)
		if tc.site != "" {
			req.Header.Set("Sec-Fetch-Site", tc.site)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("Sec-Fetch-Site %q: %d, want %d", tc.site, rec.Code, tc.status)
		}
		if has := strings.Contains(rec.Body.String(), DashboardToken()); has != (tc.status == 200) {
			t.Errorf("Sec-Fetch-Site %q: token in the reply: %v", tc.site, has)
		}
		if rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("a CORS header lets other sites read the token")
		}
	}
}

func TestDashboardEnableErrors(t *testing.T) {
	tok := DashboardToken()
	cases := []struct {
		name, body string
		status     int
	}{
		{name: "enable a service", body: `{"listener":0,"service":1,"backend":-1,"enabled":false}`, status: 200},
		{name: "global service", body: `{"listener":-1,"service":0,"backend":-1,"enabled":false}`, status: 200},
		{name: "no such backend", body: `{"listener":0,"service":0,"backend":9,"enabled":false}`, status: 404},
		{name: "a listener is not for the dashboard", body: `{"listener":0,"service":-1,"backend":-1,"enabled":false}`, status: 400},
		{name: "unknown field", body: `{"listener":0,"service":0,"backend":0,"enabled":false,"x":1}`, status: 400},
		{name: "not JSON", body: `listener=0`, status: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/dashboard/api/enable", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(TokenHeader, tok)
			rec := httptest.NewRecorder()
			NewDashboard(newFake()).ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
			}
		})
	}
}
