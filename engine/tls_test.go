package engine

import (
	"crypto/tls"
	"testing"

	"lbd/config"
)

// TestBackendTLSVersions: a backend's Disable, zproxy's Disable TLSv1_3
// and @SECLEVEL=0 in its Ciphers set the range lbd offers the backend.
func TestBackendTLSVersions(t *testing.T) {
	tests := []struct {
		name   string
		set    func(r *config.BackendRare)
		lo, hi uint16
		err    bool
	}{
		{"defaults", func(*config.BackendRare) {}, tls.VersionTLS12, tls.VersionTLS13, false},
		{"Disable TLSv1_2", func(r *config.BackendRare) { r.Disable = "TLSv1_2" }, tls.VersionTLS13, tls.VersionTLS13, false},
		{"zproxy's Disable TLSv1_3", func(r *config.BackendRare) { r.NoTLS13 = true }, tls.VersionTLS12, tls.VersionTLS12, false},
		{"security level 0 for an old backend", func(r *config.BackendRare) { r.Ciphers = "DEFAULT@SECLEVEL=0" }, tls.VersionTLS10, tls.VersionTLS13, false},
		{"nothing left", func(r *config.BackendRare) { r.Disable, r.NoTLS13 = "TLSv1_2", true }, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := config.Backend{HTTPS: true}
			tt.set(be.SetRare())
			tc, err := backendTLSConfig(&be)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if err == nil && (tc.MinVersion != tt.lo || tc.MaxVersion != tt.hi) {
				t.Errorf("range %s..%s, want %s..%s", tls.VersionName(tc.MinVersion), tls.VersionName(tc.MaxVersion),
					tls.VersionName(tt.lo), tls.VersionName(tt.hi))
			}
		})
	}
}
