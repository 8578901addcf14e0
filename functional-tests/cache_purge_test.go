package functionaltests

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// purgeConfig: three cached services in front of be. /slow/nopurge has no
// CachePurge; /slow/denied lets only 10.0.0.0/8 purge; the rest lets the
// "purgers" ACL (loopback) purge.
func purgeConfig(be *backend, zproxy bool) string {
	name := ""
	if zproxy {
		name = "\tName \"web\"\n"
	}
	svc := func(match, purge string) string {
		return "\tService\n" + match + "\t\tCache 1m\n" + purge + be.block() + "\tEnd\n"
	}
	return "Daemon 0\nLogLevel 0\nTimeOut 5\nControl \"{DIR}/ctl.sock\"\nACL \"purgers\"\n\t\"127.0.0.0/8\"\nEnd\n" +
		"ListenHTTP\n" + name + "\tAddress 127.0.0.1\n\tPort {PORT}\n" +
		svc("\t\tURL \"^/slow/nopurge\"\n", "") +
		svc("\t\tURL \"^/slow/denied\"\n", "\t\tCachePurge\n\t\t\t\"10.0.0.0/8\"\n\t\tEnd\n") +
		svc("", "\t\tCachePurge \"purgers\"\n") + "End\n"
}

// TestCachePurgeMethod: PURGE through the binary, in both dialects.
func TestCachePurgeMethod(t *testing.T) {
	for _, dialect := range []string{"pound", "zproxy"} {
		t.Run(dialect, func(t *testing.T) {
			o, be := startCacheOrigin(t, 0)
			p := startLBD(t, purgeConfig(be, dialect == "zproxy"))
			base := "http://" + p.addr
			c := &http.Client{Timeout: 10 * time.Second}
			hit := func(path string, hdr ...string) bool {
				return strings.HasPrefix(cacheGet(t, c, "GET", base+path, hdr...).cs, "lbd; hit")
			}
			fill := func(path string, hdr ...string) {
				t.Helper()
				cacheGet(t, c, "GET", base+path, hdr...)
				if !hit(path, hdr...) {
					t.Fatalf("%s %v is not cached", path, hdr)
				}
			}
			// Two variants of one URL, and a neighbour.
			fill("/vary", "Accept-Language", "en")
			fill("/vary", "Accept-Language", "fr")
			fill("/fresh")
			// The routing explainer says what PURGE would do, and does not.
			sock := filepath.Join(p.dir, "ctl.sock")
			for _, tc := range []struct{ path, want string }{
				{"/vary", "lbd answers 200 itself (purge): PURGE removes the URL here (1 stored)"},
				{"/cold", "lbd answers 404 itself (purge)"},
				{"/slow/denied", "lbd answers 403 itself (error): the client is not in the service's CachePurge ACL"},
				{"/slow/nopurge", "lbd answers 400 itself (error): the service has no CachePurge"},
			} {
				if out := lbctlOK(t, sock, "route", "PURGE", base+tc.path); !strings.Contains(out, tc.want) {
					t.Fatalf("lbctl route PURGE %s does not say %q:\n%s", tc.path, tc.want, out)
				}
			}
			if !hit("/vary", "Accept-Language", "en") {
				t.Fatal("lbctl route PURGE removed /vary")
			}
			if a := cacheGet(t, c, "PURGE", base+"/vary"); a.status != 200 || a.body != "Purged 1\n" {
				t.Fatalf("PURGE /vary: %+v", a)
			}
			if hit("/vary", "Accept-Language", "en") || hit("/vary", "Accept-Language", "fr") {
				t.Fatal("a variant of /vary is still served from the cache after PURGE")
			}
			if !hit("/fresh") {
				t.Fatal("PURGE /vary removed /fresh too")
			}
			if n := o.requests("/vary"); n != 4 {
				t.Fatalf("the origin saw /vary %d times, want 4", n)
			}
			// Nothing stored for the URL: 404.
			if a := cacheGet(t, c, "PURGE", base+"/cold"); a.status != 404 || a.body != "Not in cache\n" {
				t.Fatalf("PURGE of an URL not stored: %+v", a)
			}
			// A client outside the service's ACL: 403, nothing removed.
			fill("/slow/denied")
			if a := cacheGet(t, c, "PURGE", base+"/slow/denied"); a.status != 403 {
				t.Fatalf("PURGE from outside the ACL: %+v", a)
			}
			if !hit("/slow/denied") {
				t.Fatal("a refused PURGE removed /slow/denied")
			}
			// A service without CachePurge: an unknown method, as before.
			fill("/slow/nopurge")
			if a := cacheGet(t, c, "PURGE", base+"/slow/nopurge"); a.status != 400 {
				t.Fatalf("PURGE on a service without CachePurge: %+v", a)
			}
			if !hit("/slow/nopurge") {
				t.Fatal("a refused PURGE removed /slow/nopurge")
			}
		})
	}
}
