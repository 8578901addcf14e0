package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// ServerName returns the backend's ServerName ("" = none): the SNI of
// its TLS handshakes and, as in Pound 4, the Host its requests carry.
func (b *Backend) ServerName() string {
	if b.rare == nil {
		return ""
	}
	return b.rare.serverName
}

// HTTPS reports whether lbd talks TLS to the backend.
func (b *Backend) HTTPS() bool { return b.https }

// TLSDial returns a DialFunc for an HTTPS backend: it connects with base
// (nil = net.Dialer) and runs the TLS client handshake within the same
// context, so ConnTO bounds connect and handshake together and a failed
// handshake counts as a failed connect. Only address is wrapped: a
// separate HAport probe address stays a plain TCP connect, as in Pound.
// cfg should carry a ClientSessionCache: pooled connections come and go,
// and resumption keeps the reconnects cheap.
func TLSDial(base DialFunc, cfg *tls.Config, address string) DialFunc {
	if base == nil {
		base = DefaultDial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := base(ctx, network, addr)
		if err != nil || addr != address {
			return raw, err
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		if wantsH2(cfg) && tc.ConnectionState().NegotiatedProtocol != "h2" {
			// Told to speak HTTP/2, and the backend did not agree to it.
			tc.Close()
			return nil, errNoH2
		}
		return &tlsConn{Conn: tc, raw: raw}, nil
	}
}

// tlsConn lets the pool's stale-connection check peek at the raw socket
// under the TLS layer: pending bytes there (a close_notify, or EOF) mean
// the backend gave up on the idle connection, exactly as in plain TCP.
type tlsConn struct {
	*tls.Conn
	raw net.Conn
}

var (
	errNoRaw = errors.New("backend: no raw socket")
	errNoH2  = errors.New("the backend did not accept HTTP/2 (no ALPN h2 in its TLS handshake)")
)

// wantsH2 reports whether cfg offers only h2 by ALPN: an HTTP/2 backend.
func wantsH2(cfg *tls.Config) bool {
	return len(cfg.NextProtos) == 1 && cfg.NextProtos[0] == "h2"
}

// SyscallConn implements syscall.Conn with the raw socket.
func (c *tlsConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.raw.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errNoRaw
}
