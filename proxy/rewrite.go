package proxy

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strings"
	"time"

	"lbd/backend"
	"lbd/http1"
	"lbd/service"
)

// location is a URL split as Pound's LOCATION regex does:
// "(http|https)://([^/]+)(.*)", case-insensitive and unanchored.
type location struct {
	proto, host, path []byte // path keeps its leading '/'
	pathAt            int    // offset of path in the value
}

func parseLocation(v []byte) (location, bool) {
	for i := 0; i+7 <= len(v); i++ {
		n := 0
		switch {
		case hasPrefixFold(v[i:], "https://"):
			n = 5
		case hasPrefixFold(v[i:], "http://"):
			n = 4
		default:
			continue
		}
		rest := v[i+n+3:]
		h := bytes.IndexByte(rest, '/')
		if h < 0 {
			h = len(rest)
		}
		if h == 0 {
			continue
		}
		return location{proto: v[i : i+n], host: rest[:h], path: rest[h:], pathAt: i + n + 3 + h}, true
	}
	return location{}, false
}

func hasPrefixFold(b []byte, p string) bool {
	return len(b) >= len(p) && http1.EqualFold(b[:len(p)], p)
}

// backendAddr is the backend's IP and port; ok is false for UNIX
// sockets (RewriteLocation applies to INET backends only).
func backendAddr(b *backend.Backend) (netip.AddrPort, bool) {
	if b == nil {
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(b.Address())
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// resolveHost turns the host of a Location into an address of family
// v4/v6, as Pound's get_host (getaddrinfo) does. Literals and localhost
// need no lookup; other names are resolved, briefly, since only a
// Location naming a host needs it.
func resolveHost(hostb []byte, v4 bool) (netip.Addr, bool) {
	if a, ok := parseIPv4(hostb); ok {
		return a, v4
	}
	host := string(hostb)
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		return a, a.Is4() == v4
	}
	if strings.EqualFold(host, "localhost") {
		if v4 {
			return netip.AddrFrom4([4]byte{127, 0, 0, 1}), true
		}
		return netip.IPv6Loopback(), true
	}
	network := "ip6"
	if v4 {
		network = "ip4"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, network, host)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, false
	}
	return addrs[0].Unmap(), true
}

// parseIPv4 parses a dotted quad without converting to a string, so the
// common Location rewrite does not allocate.
func parseIPv4(b []byte) (netip.Addr, bool) {
	var a [4]byte
	part, n, digits := 0, 0, 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '.' {
			if digits == 0 || part > 3 {
				return netip.Addr{}, false
			}
			a[part] = byte(n)
			part, n, digits = part+1, 0, 0
			continue
		}
		if !isDigit(b[i]) || digits == 3 {
			return netip.Addr{}, false
		}
		n = n*10 + int(b[i]-'0')
		digits++
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	return netip.AddrFrom4(a), part == 4
}

// atoiC is C's atoi on the leading digits (0 when there are none).
func atoiC(s []byte) int {
	n := 0
	for _, ch := range s {
		if !isDigit(ch) || n > 1<<20 {
			break
		}
		n = n*10 + int(ch-'0')
	}
	return n
}

// poundNeedRewrite is Pound 4's need_rewrite (src/svc.c): a Location
// pointing at the backend, or (mode 1) at the listener with the wrong
// port or scheme, is rewritten; it returns the path to keep (without
// its first '/').
func (c *conn) poundNeedRewrite(st *Listener, mode int, val, vhost []byte) ([]byte, bool) {
	be, ok := backendAddr(c.ex.be)
	if mode == 0 || !ok {
		return nil, false
	}
	loc, ok := parseLocation(val)
	if !ok {
		return nil, false
	}
	path := bytes.TrimPrefix(loc.path, []byte{'/'})
	host, portStr, hasPort := bytes.Cut(loc.host, []byte{':'})
	port := 80
	switch {
	case hasPort:
		port = atoiC(portStr)
	case http1.EqualFold(loc.proto, "https"):
		port = 443
	}
	addr, resolved := resolveHost(host, be.Addr().Is4())
	if resolved && addr == be.Addr() && port == int(be.Port()) {
		return path, true
	}
	if !resolved && c.ex.be.ServerName() != "" && http1.EqualFold(host, c.ex.be.ServerName()) &&
		string(loc.proto) == backendScheme(c.ex.be.HTTPS()) {
		return path, true // a backend known by its TLS server name
	}
	if mode != 1 {
		return nil, false
	}
	// The listener itself, by address or by the request's Host, with the
	// wrong port or scheme (Pound 4.23 writes this test with || between
	// the two halves, which would also rewrite redirects to other sites
	// on another port; lbd keeps Pound 2's "and").
	vhostName, _, _ := bytes.Cut(vhost, []byte{':'})
	lip := c.listenerIP(st)
	sameHost := (resolved && lip.IsValid() && addr == lip) || bytes.EqualFold(host, vhostName)
	wrongPort := port != c.listenerPort(st)
	if sameHost && (wrongPort || !http1.EqualFold(loc.proto, st.Scheme)) {
		return path, true
	}
	return nil, false
}

func backendScheme(https bool) string {
	if https {
		return "https"
	}
	return "http"
}

// bindBackend finishes the head in out for the backend b just picked:
// RewriteDestination (Pound send_to_backend: the Destination header
// names the backend) and the Host line a program left for the backend's
// address (zproxy's RewriteHost). It is idempotent, so a retry on
// another backend rebinds.
func (c *conn) bindBackend(st *Listener, svc *service.Service, b *backend.Backend, out []byte) []byte {
	e := c.editsFor(st, svc)
	if b == nil || (!e.rewriteDest && !c.rs.Req.BindHost) {
		return out
	}
	if e.rewriteDest {
		if vs, ve, ok := findHeader(out, hdrDest); ok {
			if loc, ok := parseLocation(out[vs:ve]); ok {
				tail := len(out)
				// The backend's own scheme, as Pound's send_to_backend.
				if b.HTTPS() {
					out = append(out, "https://"...)
				} else {
					out = append(out, "http://"...)
				}
				out = append(out, b.Address()...)
				out = append(out, out[vs+loc.pathAt:ve]...)
				out = splice(out, vs, ve, tail)
			}
		}
	}
	if c.rs.Req.BindHost {
		if vs, ve, ok := findHeader(out, hdrHost); ok {
			tail := len(out)
			out = append(out, b.Address()...)
			out = splice(out, vs, ve, tail)
		}
	}
	return out
}

// findHeader locates the value of the first header named name in the
// head at the start of out.
func findHeader(out []byte, name string) (vs, ve int, ok bool) {
	end := bytes.Index(out, []byte("\r\n\r\n"))
	if end < 0 {
		return 0, 0, false
	}
	i := bytes.Index(out, []byte(crlf)) + 2
	for i < end+2 {
		le := i + bytes.Index(out[i:], []byte(crlf))
		line := out[i:le]
		if n := bytes.IndexByte(line, ':'); n == len(name) && http1.EqualFold(line[:n], name) {
			vs = i + n + 1
			for vs < le && (out[vs] == ' ' || out[vs] == '\t') {
				vs++
			}
			return vs, le, true
		}
		i = le + 2
	}
	return 0, 0, false
}

// splice replaces out[vs:ve] by out[tail:] (just appended) in place.
func splice(out []byte, vs, ve, tail int) []byte {
	m := len(out) - tail
	r := out[vs:]
	reverse(r)
	reverse(r[:m])
	reverse(r[m:])
	old := ve - vs
	copy(out[vs+m:], out[vs+m+old:])
	return out[:len(out)-old]
}

func reverse(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}
