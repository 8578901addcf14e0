package listener

import "crypto/tls"

// Conn is a client connection whose TLS handshake is done. Besides
// being a net.Conn it tells the proxy what Pound would put in the
// X-SSL-* request headers and the listener's NoHTTPS11 mode
// (proxy.TLSInfo); both are computed once per connection.
type Conn struct {
	*tls.Conn
	ssl       []byte
	noHTTPS11 int
}

// SSLHeaders returns the X-SSL-* lines for backends, nil when
// HeaderOption has no "ssl".
func (c *Conn) SSLHeaders() []byte { return c.ssl }

// NoHTTPS11 returns the listener's NoHTTPS11 setting (0..2).
func (c *Conn) NoHTTPS11() int { return c.noHTTPS11 }
