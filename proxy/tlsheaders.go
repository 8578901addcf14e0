package proxy

import (
	"bytes"
	"strconv"

	"lbd/backend"
	"lbd/config"
	"lbd/http1"
)

// TLSInfo is what a client connection accepted on a TLS listener tells
// the data path (package listener's Conn, and package h2's bridges). The
// values are computed once per connection, so the hot path only makes a
// type assertion and appends bytes.
type TLSInfo interface {
	// SSLHeaders returns Pound's X-SSL-* header lines, each ending in
	// CRLF, or nil when HeaderOption has no "ssl".
	SSLHeaders() []byte
	// NoHTTPS11 returns the listener's NoHTTPS11 setting: 1 = no
	// keep-alive on TLS, 2 = none for MSIE user agents.
	NoHTTPS11() int
}

// appendSSLHeaders appends the X-SSL-* lines of a TLS client, after the
// X-Forwarded-* ones as Pound 4's send_to_backend does.
func (c *conn) appendSSLHeaders(dst []byte) []byte {
	if t, ok := c.nc.(TLSInfo); ok {
		dst = append(dst, t.SSLHeaders()...)
	}
	return dst
}

// sslHeaderNames are the fields lbd sets on TLS connections (lower case,
// without "x-ssl-").
var sslHeaderNames = []string{"cipher", "subject", "issuer", "notbefore", "notafter", "serial", "certificate"}

// forgedSSL reports whether a received header is one of the X-SSL-*
// fields lbd itself sends for this connection. Pound replaces the first
// such field in place (H_REPLACE) but lets further copies through; lbd
// drops every copy, so a client can never hand a backend a certificate
// subject of its choosing.
func (c *conn) forgedSSL(name []byte) bool {
	if len(name) < 11 || !http1.EqualFold(name[:6], "X-SSL-") {
		return false
	}
	t, ok := c.nc.(TLSInfo)
	if !ok || t.SSLHeaders() == nil {
		return false
	}
	for _, n := range sslHeaderNames {
		if http1.EqualFold(name[6:], n) {
			return true
		}
	}
	return false
}

// noHTTPS11 is Pound's force_http_10: with NoHTTPS11 1 a TLS client
// connection carries one request; with 2 only MSIE clients are limited.
func (c *conn) noHTTPS11() bool {
	t, ok := c.nc.(TLSInfo)
	if !ok {
		return false
	}
	switch t.NoHTTPS11() {
	case 1:
		return true
	case 2:
		ua, _ := c.reqHeader("User-Agent")
		return bytes.Contains(ua, []byte("MSIE"))
	}
	return false
}

// bindServerName applies a backend's ServerName to the head in out:
// Pound 4 sends "Host: <ServerName>" to such a backend, replacing the
// client's Host (H_REPLACE), or adding one. Like bindBackend it is
// idempotent, so a retry on another backend rebinds.
func (c *conn) bindServerName(b *backend.Backend, out []byte) []byte {
	name := b.ServerName()
	if name == "" {
		return out
	}
	if vs, ve, ok := findHeader(out, hdrHost); ok {
		tail := len(out)
		out = append(out, name...)
		return splice(out, vs, ve, tail)
	}
	end := bytes.Index(out, []byte("\r\n\r\n"))
	if end < 0 {
		return out
	}
	tail := len(out)
	out = appendLine(out, hdrHost, name)
	return splice(out, end+2, end+2, tail)
}

// NoSSLReply is zproxy's answer to plain HTTP sent to a TLS port
// (http_events.cpp zproxy_http_event_nossl): the NoSslRedirect
// redirect, else the ErrNoSsl page (default 400 with "Please use
// HTTPS."), both as HTTP/1.1 with zproxy's fixed headers. zproxy never
// ends the redirect's header block; lbd does (documented in lbd.cfg.5),
// and closes the connection after either. n may be nil.
func NoSSLReply(n *config.ErrNoSSL) []byte {
	const tail = "Server: zproxy/\r\nCache-control: no-cache,no-store\r\n"
	if n != nil && n.Redirect != "" {
		code := zproxyRedirectCode(n.Code)
		return []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + redirectReason(code) + "\r\n" +
			"Expires: now\r\nPragma: no-cache\r\nLocation: " + n.Redirect + "\r\n" + tail + "\r\n")
	}
	status, body := 400, []byte("Please use HTTPS.")
	if n != nil && n.Status != 0 {
		status = n.Status
	}
	if n != nil && n.Page != nil {
		body = n.Page.Body
	}
	head := "HTTP/1.1 " + strconv.Itoa(status) + " " + Reason(status) + "\r\n" +
		"Content-Type: text/html\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n" +
		"Expires: now\r\nPragma: no-cache\r\n" + tail + "\r\n"
	return append([]byte(head), body...)
}
