package openssl

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// names maps IDs back to OpenSSL names so failures read like the config.
func names(ids []uint16) string {
	var out []string
	for _, id := range ids {
		for _, s := range suites {
			if s.id == id {
				out = append(out, s.name)
			}
		}
	}
	return strings.Join(out, " ")
}

// The expected selections are OpenSSL 3.0's `openssl ciphers -s -tls1_2`
// output for the same string, restricted to the suites Go implements.
func TestCipherSuites(t *testing.T) {
	tests := []struct {
		name, list, want string
	}{
		{"single name", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
		{"two names, config order kept as OpenSSL order",
			"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256",
			"ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-RSA-AES128-GCM-SHA256"},
		{"and of aliases", "ECDHE+AESGCM",
			"ECDHE-ECDSA-AES256-GCM-SHA384 ECDHE-RSA-AES256-GCM-SHA384 ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-RSA-AES128-GCM-SHA256"},
		{"mozilla-style list with unsupported DHE", "EECDH+AESGCM:EDH+AESGCM",
			"ECDHE-ECDSA-AES256-GCM-SHA384 ECDHE-RSA-AES256-GCM-SHA384 ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-RSA-AES128-GCM-SHA256"},
		{"RSA means RSA key exchange", "RSA",
			"AES256-GCM-SHA384 AES128-GCM-SHA256 AES128-SHA256 AES256-SHA AES128-SHA DES-CBC3-SHA RC4-SHA"},
		{"aRSA+SHA1", "aRSA+SHA1",
			"ECDHE-RSA-AES256-SHA ECDHE-RSA-AES128-SHA ECDHE-RSA-DES-CBC3-SHA ECDHE-RSA-RC4-SHA AES256-SHA AES128-SHA DES-CBC3-SHA RC4-SHA"},
		{"ECDSA authentication", "ECDSA+AES",
			"ECDHE-ECDSA-AES256-GCM-SHA384 ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES128-SHA256 ECDHE-ECDSA-AES256-SHA ECDHE-ECDSA-AES128-SHA"},
		{"mac alias excludes AEAD", "SHA256", "ECDHE-ECDSA-AES128-SHA256 ECDHE-RSA-AES128-SHA256 AES128-SHA256"},
		{"protocol alias", "TLSv1", "ECDHE-ECDSA-AES256-SHA ECDHE-RSA-AES256-SHA ECDHE-ECDSA-AES128-SHA ECDHE-RSA-AES128-SHA ECDHE-RSA-DES-CBC3-SHA ECDHE-ECDSA-RC4-SHA ECDHE-RSA-RC4-SHA"},
		{"delete then add back", "AES128:-RSA:AES128-SHA",
			"ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-RSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES128-SHA256 ECDHE-RSA-AES128-SHA256 ECDHE-ECDSA-AES128-SHA ECDHE-RSA-AES128-SHA AES128-SHA"},
		{"kill is permanent", "AES128:!RSA:AES128-SHA",
			"ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-RSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES128-SHA256 ECDHE-RSA-AES128-SHA256 ECDHE-ECDSA-AES128-SHA ECDHE-RSA-AES128-SHA"},
		{"classic Pound advice", "HIGH:!aNULL:!MD5:!RC4:!3DES:@STRENGTH",
			"ECDHE-ECDSA-AES256-GCM-SHA384 ECDHE-RSA-AES256-GCM-SHA384 ECDHE-ECDSA-CHACHA20-POLY1305 ECDHE-RSA-CHACHA20-POLY1305 ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-RSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES128-SHA256 ECDHE-RSA-AES128-SHA256 ECDHE-ECDSA-AES256-SHA ECDHE-RSA-AES256-SHA ECDHE-ECDSA-AES128-SHA ECDHE-RSA-AES128-SHA AES256-GCM-SHA384 AES128-GCM-SHA256 AES128-SHA256 AES256-SHA AES128-SHA"},
		{"DEFAULT has no RC4 or 3DES", "DEFAULT:!ECDHE:!AES128",
			"AES256-GCM-SHA384 AES256-SHA"},
		{"@ starts an item, as in OpenSSL", "ECDHE+AESGCM+AES256@SECLEVEL=0",
			"ECDHE-ECDSA-AES256-GCM-SHA384 ECDHE-RSA-AES256-GCM-SHA384"},
		{"separators and ordering op", "ALL,-AES128 +AES256;!MEDIUM",
			"ECDHE-ECDSA-AES256-GCM-SHA384 ECDHE-RSA-AES256-GCM-SHA384 ECDHE-ECDSA-CHACHA20-POLY1305 ECDHE-RSA-CHACHA20-POLY1305 ECDHE-ECDSA-AES256-SHA ECDHE-RSA-AES256-SHA AES256-GCM-SHA384 AES256-SHA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, err := CipherSuites(tt.list)
			if err != nil {
				t.Fatalf("CipherSuites(%q): %v", tt.list, err)
			}
			if got := names(ids); got != tt.want {
				t.Errorf("CipherSuites(%q)\n got %s\nwant %s", tt.list, got, tt.want)
			}
		})
	}
}

func TestCipherSuitesErrors(t *testing.T) {
	tests := []struct {
		name, list, unknown string
	}{
		{"typo in a name", "ECDHE-RSA-AES128-GCM-SHA265", "ECDHE-RSA-AES128-GCM-SHA265"},
		{"aliases are case-sensitive as in OpenSSL", "high:!aNULL", "high"},
		{"unknown term in an and", "ECDHE+FOO", "FOO"},
		{"unknown command", "@FOO", "@FOO"},
		{"empty term", "ECDHE++AES", "ECDHE++AES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CipherSuites(tt.list)
			var ue *ErrUnknownCipher
			if !errors.As(err, &ue) || ue.Name != tt.unknown {
				t.Fatalf("CipherSuites(%q) = %v, want unknown cipher %q", tt.list, err, tt.unknown)
			}
			if !strings.Contains(err.Error(), tt.unknown) {
				t.Errorf("error %q does not name %q", err, tt.unknown)
			}
		})
	}
	for _, list := range []string{"DHE-RSA-AES128-GCM-SHA256", "CAMELLIA:PSK", "TLS_AES_128_GCM_SHA256", "ALL:!ALL"} {
		if ids, err := CipherSuites(list); err == nil {
			t.Errorf("CipherSuites(%q) = %s, want a no-usable-cipher error", list, names(ids))
		}
	}
}

func TestCheckTLS13Suites(t *testing.T) {
	tests := []struct {
		name, list string
		ok         bool
	}{
		{"all Go suites", "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256", true},
		{"CCM known to OpenSSL", "TLS_AES_128_CCM_SHA256", true},
		{"TLS 1.2 name", "ECDHE-RSA-AES128-GCM-SHA256", false},
		{"typo", "TLS_AES_128_GCM_SHA265", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckTLS13Suites(tt.list); (err == nil) != tt.ok {
				t.Errorf("CheckTLS13Suites(%q) = %v, want ok=%v", tt.list, err, tt.ok)
			}
		})
	}
}

// Every suite Go implements must be reachable by name, so no
// configuration is forced to use aliases to get one.
func TestEveryGoSuiteHasAName(t *testing.T) {
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if slices.ContainsFunc(cs.SupportedVersions, func(v uint16) bool { return v == tls.VersionTLS13 }) {
			continue
		}
		if strings.HasPrefix(CipherDescription(cs.ID), "TLS_") {
			t.Errorf("%s has no OpenSSL name", cs.Name)
		}
	}
}

func TestCurves(t *testing.T) {
	cases := []struct {
		name, in string
		want     []tls.CurveID
		err      bool
	}{
		{name: "zproxy's prime256v1", in: "prime256v1", want: []tls.CurveID{tls.CurveP256}},
		{name: "a list keeps its order", in: "X25519:secp384r1", want: []tls.CurveID{tls.X25519, tls.CurveP384}},
		{name: "NIST alias, any case", in: "P-521", want: []tls.CurveID{tls.CurveP521}},
		{name: "unknown name", in: "brainpoolP256r1", err: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Curves(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if !tc.err && fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
