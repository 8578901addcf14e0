package adminapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// acmeFixture: one valid certificate, one name still without one whose
// last attempt failed.
func acmeFixture() *ACMEStatus {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return &ACMEStatus{Directory: "https://acme.example.net/dir", Certs: []ACMECert{
		{Name: "a.example.com", Issuer: "Example CA R1", Serial: "0a1b2c", NotBefore: at.Add(-24 * time.Hour),
			NotAfter: at.Add(89 * 24 * time.Hour), NextRenew: at.Add(59 * 24 * time.Hour), Stapled: true, Obtained: 1},
		{Name: "b.example.com", LastError: "connection refused", LastErrorAt: at.Add(-time.Minute), Failures: 2, Busy: true},
	}}
}

// acmeCtl is the fake controller with renewals.
type acmeCtl struct {
	*fakeCtl
	renewed []string
	err     error
}

func (c *acmeCtl) RenewCertificate(_ context.Context, name string) error {
	c.renewed = append(c.renewed, name)
	return c.err
}

func TestACMEGolden(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		zproxy     bool
	}{
		{name: "acme_pound.json", path: "/acme"},
		{name: "acme_zproxy.json", path: "/acme/", zproxy: true},
		{name: "metrics_acme.txt", path: "/metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newFake()
			ctl.st.Core.Timestamp = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			ctl.st.ACME = acmeFixture()
			h := NewPoundHandler(ctl)
			if tc.zproxy {
				h = NewZproxyHandler(ctl)
			}
			rec := do(h, http.MethodGet, tc.path, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			body := rec.Body.Bytes()
			if tc.path == "/metrics" {
				body = []byte(acmeLines(rec.Body.String()))
			}
			checkGolden(t, tc.name, body)
		})
	}
}

// acmeLines keeps the lbd_acme_* lines of an exposition.
func acmeLines(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.Contains(l, "lbd_acme_") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func TestACMEEndpoints(t *testing.T) {
	without := newFake()
	for _, h := range []http.Handler{NewPoundHandler(without), NewZproxyHandler(without)} {
		rec := do(h, http.MethodGet, "/acme", "")
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "no ACMEAccount section") {
			t.Errorf("GET /acme without ACME: %d %s", rec.Code, rec.Body)
		}
	}
	if rec := do(NewPoundHandler(without), http.MethodGet, "/metrics", ""); strings.Contains(rec.Body.String(), "lbd_acme") {
		t.Errorf("metrics without ACME mention it")
	}

	for _, tc := range []struct {
		name, method, path, body string
		err                      error
		status                   int
		reason                   string
		renewed                  bool
	}{
		{name: "renewed", method: http.MethodPost, path: "/acme/renew", body: `{"name":"a.example.com"}`, status: 200, reason: `"serial":"0a1b2c"`, renewed: true},
		{name: "unknown name", method: http.MethodPost, path: "/acme/renew", body: `{"name":"x.example.com"}`,
			err: fmt.Errorf("%w: x.example.com is not an automatic name", ErrNotFound), status: 404, reason: "x.example.com is not an automatic name", renewed: true},
		{name: "CA down", method: http.MethodPost, path: "/acme/renew", body: `{"name":"a.example.com"}`,
			err: errors.New("dial tcp: connection refused"), status: 502, reason: "connection refused", renewed: true},
		{name: "no name", method: http.MethodPost, path: "/acme/renew", body: `{}`, status: 400, reason: "malformed request"},
		{name: "not JSON", method: http.MethodPost, path: "/acme/renew", body: `a.example.com`, status: 400, reason: "malformed request"},
		{name: "GET renew", method: http.MethodGet, path: "/acme/renew", status: 405, reason: "use POST /acme/renew"},
		{name: "POST list", method: http.MethodPost, path: "/acme", status: 405, reason: "use GET /acme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := &acmeCtl{fakeCtl: newFake(), err: tc.err}
			ctl.st.ACME = acmeFixture()
			rec := do(NewPoundHandler(ctl), tc.method, tc.path, tc.body)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.reason) {
				t.Errorf("got %d %s, want %d with %q", rec.Code, rec.Body, tc.status, tc.reason)
			}
			if got := len(ctl.renewed) > 0; got != tc.renewed {
				t.Errorf("renewal asked: %v, want %v", got, tc.renewed)
			}
		})
	}
}
