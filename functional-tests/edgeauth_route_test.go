package functionaltests

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	lbexplain "lbd/explain"
)

// TestEdgeAuthRouteAndMetrics: lbctl route says which check passed or
// failed and why (the JWT condition in the service list, Authenticate
// in the checks, the 401 it would answer), and the lbd_auth_decisions
// family counts the real requests by result.
func TestEdgeAuthRouteAndMetrics(t *testing.T) {
	dir := t.TempDir()
	k := genKey(t, jose.ES384, "k1")
	writeJWKS(t, filepath.Join(dir, "keys.jwks"), k)
	be := echoBackend(t, "a")
	p := startLBD(t, `Control "{DIR}/ctl.sock"
JWTAuth "api"
	KeyFile "`+filepath.Join(dir, "keys.jwks")+`"
	Realm "api"
	ForwardClaim "sub" "X-User"
End
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "metrics"
		URL "^/metrics$"
		Metrics
	End
	Service "admin"
		URL "^/admin"
		JWT "api" "role" "admin"
		`+backendBlock(be)+`
	End
	Service "api"
		Authenticate "api"
		`+backendBlock(be)+`
	End
End
`)
	sock := filepath.Join(p.dir, "ctl.sock")
	good := k.token(t, map[string]any{"role": "user"})
	expired := k.token(t, map[string]any{"exp": 1})

	r := explainVia(t, sock, "-H", "Authorization: Bearer "+good, "GET", "/admin/x")
	if got := verdicts(r); !strings.Contains(got, "admin=") || r.Service == nil || r.Services[*r.Service].Name != "api" {
		t.Fatalf("services %s, chosen %v", got, r.Service)
	}
	found := false
	for _, s := range r.Services {
		for _, st := range s.Conditions {
			if strings.HasPrefix(st.Test, `jwt "api" claim "role"`) && st.Detail == "authenticated as alice" {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("the JWT condition's step does not say who the token is from:\n%s", routeJSON(t, sock, "-H", "Authorization: Bearer "+good, "GET", "/admin/x"))
	}
	if !hasCheck(r, `authentication "api"`, true, "passed as alice") || r.Forwarded == nil || !strings.Contains(strings.Join(r.Forwarded.Headers, "\n"), "X-User: alice") {
		t.Fatalf("checks %+v, forwarded %+v", r.Checks, r.Forwarded)
	}
	r = explainVia(t, sock, "-H", "Authorization: Bearer "+expired, "GET", "/x")
	if !hasCheck(r, `authentication "api"`, false, "the token has expired") || r.Reply == nil || r.Reply.Status != 401 {
		t.Fatalf("expired token: checks %+v, reply %+v", r.Checks, r.Reply)
	}

	for range 3 {
		getWith(t, p, "/x", "Authorization: Bearer "+good)
	}
	getWith(t, p, "/x", "Authorization: Bearer "+expired)
	_, body := get(t, http.DefaultClient, "http://"+p.addr+"/metrics")
	for _, want := range []string{
		`lbd_auth_decisions_total{auth="api",kind="jwt",decision="pass"} 3`,
		`lbd_auth_decisions_total{auth="api",kind="jwt",decision="refuse"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in the metrics", want)
		}
	}
}

func hasCheck(r *lbexplain.Route, name string, ok bool, detail string) bool {
	for _, c := range r.Checks {
		if c.Check == name && c.OK == ok && strings.Contains(c.Detail, detail) {
			return true
		}
	}
	return false
}
