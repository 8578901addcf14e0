package listener

import (
	"crypto/tls"
	"io"
	"net"
	"testing"

	"github.com/sirupsen/logrus"

	"lbd/config"
)

// TestProtocolRange: the protocols a listener accepts follow Disable (with
// zproxy's Disable TLSv1_3 as NoTLS13) and, for TLS 1.0 and 1.1, an
// explicit @SECLEVEL=0 in Ciphers; each version is tried alone by a Go
// client.
func TestProtocolRange(t *testing.T) {
	p := newPKI(t)
	versions := []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13}
	tests := []struct {
		name    string
		disable string
		noTLS13 bool
		ciphers string
		want    []bool // per entry of versions
	}{
		{"default: TLS 1.2 and 1.3", "", false, "", []bool{false, false, true, true}},
		{"Disable TLSv1_1 changes nothing", "TLSv1_1", false, "", []bool{false, false, true, true}},
		{"Disable TLSv1_2: TLS 1.3 only", "TLSv1_2", false, "", []bool{false, false, false, true}},
		{"zproxy's Disable TLSv1_3: TLS 1.2 only", "", true, "", []bool{false, false, true, false}},
		{"security level 1 is not an opt-in", "", false, "ALL:@SECLEVEL=1", []bool{false, false, true, true}},
		{"security level 0 lets TLS 1.0 and 1.1 in", "", false, "ALL@SECLEVEL=0", []bool{true, true, true, true}},
		{"level 0 with Disable TLSv1", "TLSv1", false, "ALL@SECLEVEL=0", []bool{false, true, true, true}},
		{"level 0 with zproxy's Disable TLSv1_3", "SSLv3", true, "ALL@SECLEVEL=0", []bool{true, true, true, false}},
		{"nothing left fails every handshake", "TLSv1_3", false, "", []bool{false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := p.listenerConfig(t)
			lc.TLS.Disable, lc.TLS.NoTLS13, lc.TLS.Ciphers = tt.disable, tt.noTLS13, tt.ciphers
			l := startTLSErr(t, lc, tt.want[2] || tt.want[3])
			for i, v := range versions {
				cfg := clientConfig(p)
				cfg.MinVersion, cfg.MaxVersion = v, v
				c, err := tls.Dial("tcp", l.Addr().String(), cfg)
				if err == nil {
					if got := c.ConnectionState().Version; got != v {
						t.Errorf("%s: negotiated %s", tls.VersionName(v), tls.VersionName(got))
					}
					c.Close()
				}
				if (err == nil) != tt.want[i] {
					t.Errorf("%s: handshake error %v, want success %v", tls.VersionName(v), err, tt.want[i])
				}
			}
		})
	}
}

// startTLSErr is startTLS for settings Configure may refuse (ok false):
// the listener then fails every handshake.
func startTLSErr(t *testing.T, lc *config.Listener, ok bool) *TLS {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	l := NewTLS(inner, log)
	if err := l.Configure(&config.Config{Dialect: config.DialectPound}, lc); (err == nil) != ok {
		t.Fatalf("Configure: %v, want success %v", err, ok)
	}
	t.Cleanup(func() { l.Close(); l.Wait() })
	fakeProxy(t, l)
	return l
}
