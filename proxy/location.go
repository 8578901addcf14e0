package proxy

import (
	"bytes"
)

// RewriteLocation is the rewrite_location instruction's work (zproxy's
// rewriteHeaderLocation, rules.LocationRewriter): a Location to the
// backend keeps its scheme, one to the listener with the wrong port or
// scheme (mode 1) gets the other scheme; either way the host becomes the
// request's Host. With undoURL the part of the path RewriteUrl changed
// is put back. It applies to responses relayed from an INET backend
// only, with a value Pound's LOCATION pattern parses.
func (c *conn) RewriteLocation(dst, value []byte, mode int, undoURL bool) ([]byte, bool) {
	st := c.locSt
	be, ok := backendAddr(c.ex.be)
	if !ok || st == nil {
		return dst, false
	}
	loc, ok := parseLocation(value)
	if !ok {
		return dst, false
	}
	vhost, _ := c.reqHeader(hdrHost)
	prefix := ""
	if mode != 0 {
		hostName, portStr, hasPort := bytes.Cut(loc.host, []byte{':'})
		port := 80
		switch {
		case hasPort:
			port = atoiC(portStr)
		case string(loc.proto) == "https":
			port = 443
		}
		if addr, ok := resolveHost(hostName, be.Addr().Is4()); ok {
			switch {
			case addr == be.Addr() && port == int(be.Port()):
				prefix = string(loc.proto)
			case mode == 1 && (port != c.listenerPort(st) || string(loc.proto) != st.Scheme) &&
				(addr == c.listenerIP(st) || bytes.Equal(loc.host, vhost)):
				prefix = "https"
				if string(loc.proto) == "https" {
					prefix = "http"
				}
			}
		}
	}
	if prefix != "" {
		dst = append(dst, prefix...)
		dst = append(dst, "://"...)
		dst = append(dst, vhost...)
	} else {
		dst = append(dst, loc.proto...)
		dst = append(dst, "://"...)
		dst = append(dst, loc.host...)
	}
	if !undoURL {
		return append(dst, loc.path...), true
	}
	return c.appendUnrewrittenPath(dst, loc.path), true
}

// appendUnrewrittenPath appends path, with the prefix RewriteUrl wrote
// replaced by the original one.
func (c *conn) appendUnrewrittenPath(dst, path []byte) []byte {
	url, tail, ok := c.rs.Req.Rewritten()
	if !ok || tail > len(c.req.Target) || tail > len(url) {
		return append(dst, path...)
	}
	repl := url[:len(url)-tail]
	orig := c.req.Target[:len(c.req.Target)-tail]
	if len(repl) == 0 || !bytes.HasPrefix(path, repl) {
		return append(dst, path...)
	}
	dst = append(dst, orig...)
	return append(dst, path[len(repl):]...)
}
