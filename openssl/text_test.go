package openssl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"strings"
	"testing"
	"time"
)

// The wanted lines are `openssl ciphers -v` output of OpenSSL 3.0.
func TestCipherDescription(t *testing.T) {
	tests := []struct {
		id   uint16
		want string
	}{
		{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "ECDHE-ECDSA-AES128-GCM-SHA256  TLSv1.2 Kx=ECDH     Au=ECDSA Enc=AESGCM(128)            Mac=AEAD"},
		{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, "ECDHE-RSA-CHACHA20-POLY1305    TLSv1.2 Kx=ECDH     Au=RSA   Enc=CHACHA20/POLY1305(256) Mac=AEAD"},
		{tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, "ECDHE-RSA-AES256-SHA           TLSv1   Kx=ECDH     Au=RSA   Enc=AES(256)               Mac=SHA1"},
		{tls.TLS_RSA_WITH_AES_128_CBC_SHA256, "AES128-SHA256                  TLSv1.2 Kx=RSA      Au=RSA   Enc=AES(128)               Mac=SHA256"},
		{tls.TLS_RSA_WITH_AES_128_CBC_SHA, "AES128-SHA                     SSLv3   Kx=RSA      Au=RSA   Enc=AES(128)               Mac=SHA1"},
		{tls.TLS_CHACHA20_POLY1305_SHA256, "TLS_CHACHA20_POLY1305_SHA256   TLSv1.3 Kx=any      Au=any   Enc=CHACHA20/POLY1305(256) Mac=AEAD"},
	}
	for _, tt := range tests {
		t.Run(tls.CipherSuiteName(tt.id), func(t *testing.T) {
			if got := CipherDescription(tt.id); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	if got, want := CipherHeader(tls.VersionTLS13, tls.TLS_AES_128_GCM_SHA256),
		"X-SSL-cipher: TLSv1.3/TLS_AES_128_GCM_SHA256         TLSv1.3 Kx=any      Au=any   Enc=AESGCM(128)            Mac=AEAD\r\n"; got != want {
		t.Errorf("CipherHeader = %q, want %q", got, want)
	}
}

func rawName(t *testing.T, n pkix.Name) []byte {
	t.Helper()
	der, err := asn1.Marshal(n.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// The wanted strings are what `openssl x509 -noout -subject -nameopt
// oneline,-esc_msb` prints for certificates with these subjects.
func TestNameOneLine(t *testing.T) {
	tests := []struct {
		name string
		dn   pkix.Name
		want string
	}{
		{"plain", pkix.Name{CommonName: "client.example.com", Organization: []string{"Example"}, Country: []string{"DE"}},
			"C = DE, O = Example, CN = client.example.com"},
		{"specials are quoted, quote and backslash escaped",
			pkix.Name{CommonName: "a,b+c", Organization: []string{`Ex "q" \ back`}, OrganizationalUnit: []string{" lead"}, Locality: []string{"trail "}},
			`L = "trail ", O = Ex \"q\" \\ back, OU = " lead", CN = "a,b+c"`},
		{"email, unknown OID, leading hash",
			pkix.Name{CommonName: "#hash", Province: []string{"Bayern;x<y>"}, ExtraNames: []pkix.AttributeTypeAndValue{
				{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "a@b.c"},
				{Type: asn1.ObjectIdentifier{1, 2, 3, 4}, Value: "odd"}}},
			`ST = "Bayern;x<y>", CN = "#hash", emailAddress = a@b.c, 1.2.3.4 = odd`},
		{"UTF-8 kept, control escaped",
			pkix.Name{CommonName: "Jürgen Straße", SerialNumber: "12345", StreetAddress: []string{"ctl\x01x"}},
			`street = ctl\01x, CN = Jürgen Straße, serialNumber = 12345`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NameOneLine(rawName(t, tt.dn)); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	if got := NameOneLine([]byte{0x30, 0x03, 0x01}); got != "" {
		t.Errorf("garbage name printed as %q", got)
	}
}

func TestTimeAndSerial(t *testing.T) {
	if got, want := TimeString(time.Date(2012, 2, 4, 16, 52, 42, 0, time.FixedZone("x", 3600))), "Feb  4 15:52:42 2012 GMT"; got != want {
		t.Errorf("TimeString = %q, want %q", got, want)
	}
	big128, _ := new(big.Int).SetString("1234567890123456789012345678901234", 10)
	tests := []struct {
		n    *big.Int
		want string
	}{{big.NewInt(1000), "1000"}, {big128, "-1"}, {nil, "-1"}}
	for _, tt := range tests {
		if got := SerialString(tt.n); got != tt.want {
			t.Errorf("SerialString(%v) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestClientCertHeaders(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "alice"},
		NotBefore: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), NotAfter: time.Date(2035, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	got := ClientCertHeaders(c)
	for _, want := range []string{
		"X-SSL-Subject: CN = alice\r\n", "X-SSL-Issuer: CN = alice\r\n",
		"X-SSL-notBefore: Jan  2 03:04:05 2025 GMT\r\n", "X-SSL-notAfter: Jan  2 03:04:05 2035 GMT\r\n",
		"X-SSL-serial: 42\r\n", "X-SSL-certificate: -----BEGIN CERTIFICATE-----\r\n\t",
		"\r\n\t-----END CERTIFICATE-----\r\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("headers lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\r\n") - strings.Count(got, "\r\n\t"); n != 6 {
		t.Errorf("%d header lines, want 6:\n%s", n, got)
	}
}
