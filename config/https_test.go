package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDisableByDialect: Disable X turns off X and every older protocol in
// both dialects, except zproxy's Disable TLSv1_3 (TLS 1.3 alone); a set of
// statements that leaves nothing is an error at the statement that
// emptied it, in either order. (Columns count a tab to the next multiple
// of 8, as lbd reports them.)
func TestDisableByDialect(t *testing.T) {
	name := filepath.Join(goldenDir, "disable.cfg")
	tests := []struct {
		name        string
		dialect     Dialect
		disable     []string
		wantDisable string
		wantNo13    bool
		wantErr     string // "" = loads
	}{
		{"pound: nothing", DialectPound, nil, "", false, ""},
		{"pound: the highest wins", DialectPound, []string{"TLSv1_1", "SSLv3"}, "TLSv1_1", false, ""},
		{"pound: TLSv1_2 and older", DialectPound, []string{"TLSv1_2"}, "TLSv1_2", false, ""},
		{"pound: TLSv1_3 leaves nothing", DialectPound, []string{"TLSv1_3"}, "", false,
			"disable.cfg:5.17-23: Disable TLSv1_3 turns off TLS 1.3 and every older protocol (Pound's meaning)"},
		{"pound: reported once", DialectPound, []string{"TLSv1_3", "SSLv3"}, "", false, "disable.cfg:5.17-23:"},
		{"zproxy: TLSv1_3 alone", DialectZproxy, []string{"TLSv1_3"}, "", true, ""},
		{"zproxy: TLSv1_1 still takes the older ones", DialectZproxy, []string{"TLSv1_1", "TLSv1_3"}, "TLSv1_1", true, ""},
		{"zproxy: TLSv1_2 then TLSv1_3 leave nothing", DialectZproxy, []string{"TLSv1_2", "TLSv1_3"}, "", false,
			"disable.cfg:6.17-23: Disable TLSv1_2 and Disable TLSv1_3 together leave no protocol enabled"},
		{"zproxy: the other order too", DialectZproxy, []string{"TLSv1_3", "TLSv1_2"}, "", false,
			"disable.cfg:6.17-23: Disable TLSv1_2 and Disable TLSv1_3 together"},
		{"unknown name", DialectZproxy, []string{"TLSv2"}, "", false, "disable.cfg:5.17-21: unrecognized protocol name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := ""
			for _, d := range tt.disable {
				lines += "\tDisable " + d + "\n"
			}
			src := "ListenHTTPS\n\tAddress 127.0.0.1\n\tPort 8443\n\tCert \"files/server.pem\"\n" + lines +
				"\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 8081\n\t\tEnd\n\tEnd\nEnd\n"
			cfg, _, err := LoadBytes(name, []byte(src), LoadOptions{NoDNS: true, Dialect: tt.dialect, DialectWhy: "test"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("load error = %v, want %q", err, tt.wantErr)
				}
				if n := strings.Count(err.Error(), "Disable TLSv1_3 turns off"); n > 1 {
					t.Errorf("reported %d times:\n%v", n, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("load failed: %v", err)
			}
			l := cfg.Listeners[0].TLS
			if l.Disable != tt.wantDisable || l.NoTLS13 != tt.wantNo13 {
				t.Errorf("Disable %q, NoTLS13 %v; want %q, %v", l.Disable, l.NoTLS13, tt.wantDisable, tt.wantNo13)
			}
		})
	}
}

// TestBackendDisableByDialect: a backend's Disable reads like a
// listener's.
func TestBackendDisableByDialect(t *testing.T) {
	tests := []struct {
		name     string
		dialect  Dialect
		wantNo13 bool
		wantErr  string
	}{
		{"pound refuses", DialectPound, false, "t.cfg:5.33-39: Disable TLSv1_3 turns off"},
		{"zproxy keeps TLS 1.2", DialectZproxy, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "ListenHTTP\n\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tDisable TLSv1_3\n\t\tEnd\n\tEnd\nEnd\n"
			cfg, _, err := LoadBytes("t.cfg", []byte(src), LoadOptions{NoDNS: true, Dialect: tt.dialect, DialectWhy: "test"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("load error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("load failed: %v", err)
			}
			be := cfg.Listeners[0].Services[0].Backends[0]
			if !be.HTTPS || be.Rare().NoTLS13 != tt.wantNo13 || be.Rare().Disable != "" {
				t.Errorf("HTTPS %v, Disable %q, NoTLS13 %v", be.HTTPS, be.Rare().Disable, be.Rare().NoTLS13)
			}
		})
	}
}
