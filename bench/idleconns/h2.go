//go:build linux

package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"lbd/internal/testpki"
)

// writeCert writes a self-signed ECDSA P-256 certificate and key for the
// listener and returns the file's path.
func writeCert(dir string) string {
	cert, err := testpki.Issue(testpki.Spec{CommonName: "idle.test", DNSNames: []string{"idle.test"}}, nil)
	check(err)
	path := filepath.Join(dir, "site.pem")
	check(testpki.WriteFile(path, append(cert.CertPEM(), cert.KeyPEM()...)))
	return path
}

// requestTLS runs one HTTP/1.1 request over TLS (ALPN http/1.1) on c.
func requestTLS(c net.Conn) net.Conn {
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, ServerName: "idle.test", NextProtos: []string{"http/1.1"}})
	check(tc.Handshake())
	if p := tc.ConnectionState().NegotiatedProtocol; p != "http/1.1" && p != "" {
		check(fmt.Errorf("ALPN chose %q, not http/1.1", p))
	}
	return request(tc)
}

// requestH2 turns c into an HTTP/2 connection (TLS, ALPN h2) and runs one
// GET on it to completion.
func requestH2(c net.Conn) net.Conn {
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, ServerName: "idle.test", NextProtos: []string{"h2"}})
	check(tc.Handshake())
	if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
		check(fmt.Errorf("ALPN chose %q, not h2", p))
	}
	_, err := io.WriteString(tc, http2.ClientPreface)
	check(err)
	fr := http2.NewFramer(tc, tc)
	check(fr.WriteSettings())
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {":authority", "idle.test"}} {
		check(enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	check(fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true, EndStream: true}))
	tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := fr.ReadFrame()
		check(err)
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			check(fr.WriteSettingsAck())
		}
		if h := f.Header(); h.StreamID == 1 && h.Flags.Has(http2.FlagDataEndStream) {
			break
		}
	}
	tc.SetReadDeadline(time.Time{})
	return tc
}
