package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// TLS validation: configurations are loaded as if they sat in the golden
// directory, so files/server.pem and files/ca.pem resolve.
func TestTLSValidation(t *testing.T) {
	name := filepath.Join(goldenDir, "tls_validation.cfg")
	tests := []struct {
		name, listener, backend string
		wantErr                 string // "" = loads
	}{
		{"known ciphers", `Ciphers "ECDHE+AESGCM:!aNULL"`, "", ""},
		{"an unknown cipher alone is named", `Ciphers "ECDHE-RSA-AES128-GCM-SHA265"`, "", `unknown cipher "ECDHE-RSA-AES128-GCM-SHA265"`},
		{"beside known ones it is ignored, as by OpenSSL", `Ciphers "ECDHE-RSA-AES128-GCM-SHA265:HIGH"`, "", ""},
		{"obsolete names of real configs", `Ciphers "ALL:!ADH:!EXPORT:!SSLv2:RC4+RSA:+HIGH:+MEDIUM"`, "", ""},
		{"nothing usable", `Ciphers "DHE-RSA-AES128-GCM-SHA256"`, "", "is supported"},
		{"bad TLS 1.3 suite", `Ciphers -ciphersuites "TLS_AES_128_CCM_16_SHA256"`, "", `unknown cipher "TLS_AES_128_CCM_16_SHA256"`},
		{"backend cipher checked too", "", `Ciphers "RC4-MD4"`, `unknown cipher "RC4-MD4"`},
		{"VerifyList without certificates", `VerifyList "files/err404.html"`, "", "no PEM certificate found"},
		{"CAlist with certificates", `CAlist "files/ca.pem"`, "", ""},
		{"backend VerifyList", "", `VerifyList "files/ca.pem"`, ""},
		{"backend VerifyList without certificates", "", `VerifyList "files/err400.html"`, "no PEM certificate found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "ListenHTTPS\n\tAddress 127.0.0.1\n\tPort 8443\n\tCert \"files/server.pem\"\n\t" + tt.listener +
				"\n\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 8081\n\t\t\t" + tt.backend + "\n\t\tEnd\n\tEnd\nEnd\n"
			cfg, warns, err := LoadBytes(name, []byte(src), LoadOptions{NoDNS: true})
			if strings.Contains(tt.name, "ignored") && (len(warns) != 1 || !strings.Contains(warns[0].Msg, "selects nothing")) {
				t.Errorf("warnings %v, want one about the ignored cipher", warns)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("load failed: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("load error = %v, want %q", err, tt.wantErr)
			}
			if strings.Contains(tt.backend, "VerifyList") && err == nil {
				be := cfg.Listeners[0].Services[0].Backends[0]
				if !be.HTTPS || be.Rare().VerifyList == nil {
					t.Errorf("backend VerifyList: https %v, list %v", be.HTTPS, be.Rare().VerifyList)
				}
			}
		})
	}
}
