package proxy

import (
	"bytes"
	"encoding/base64"
	"net"
	"net/netip"
	"strconv"

	"lbd/config"
	"lbd/http1"
)

// listenerFacts are what Pound reads from lstn->addr: the listener's
// address and port (for %A, %p, %v, X-Forwarded-Port and
// RewriteLocation) and its scheme.
type listenerFacts struct {
	ip    netip.Addr // configured address; invalid: ask the socket
	port  int        // configured port; 0: ask the socket
	unix  string     // UNIX socket path
	https bool
	anon  bool // Anonymise: %[remoteip] hides the last byte too
}

func newListenerFacts(l *config.Listener) listenerFacts {
	if l == nil {
		return listenerFacts{}
	}
	f := listenerFacts{port: l.Port, https: l.HTTPS}
	switch {
	case l.Unix:
		f.unix = l.Address
	case l.Address == "" && l.SocketFrom == "":
		// Pound binds all interfaces and reports the wildcard.
		f.ip = netip.IPv4Unspecified()
	default:
		if a, err := netip.ParseAddr(l.Address); err == nil {
			f.ip = a.Unmap()
		}
	}
	return f
}

// facts returns the listener facts, from the listener's own edits.
func (st *Listener) facts() *listenerFacts {
	if st.Edits == nil {
		return &listenerFacts{}
	}
	return &st.Edits.lst
}

// localAddrPort is the address the client connected to.
func (c *conn) localAddrPort() netip.AddrPort {
	if ta, ok := c.nc.LocalAddr().(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

// listenerIP is the listener's address: configured, else the socket's.
func (c *conn) listenerIP(st *Listener) netip.Addr {
	if f := st.facts(); f.ip.IsValid() {
		return f.ip
	}
	return c.localAddrPort().Addr()
}

// listenerPort is the listener's port; ok is false for UNIX sockets.
func (c *conn) listenerPort(st *Listener) int {
	if f := st.facts(); f.port > 0 {
		return f.port
	}
	return int(c.localAddrPort().Port())
}

// appendListenerIP prints the listener address as addr2str does.
func (c *conn) appendListenerIP(st *Listener, b []byte) []byte {
	if f := st.facts(); f.unix != "" {
		return append(b, f.unix...)
	}
	return appendAddr(b, c.listenerIP(st))
}

// appendAddr prints an address as Pound's addr2str: IPv6 in brackets;
// nothing for a UNIX-socket peer (its unnamed path).
func appendAddr(b []byte, a netip.Addr) []byte {
	if !a.IsValid() {
		return b
	}
	if a.Is6() {
		b = append(b, '[')
		b = a.AppendTo(b)
		return append(b, ']')
	}
	return a.AppendTo(b)
}

// appendRequestLine is %r: the request line as received; empty when the
// line itself could not be read, as in Pound.
func (c *conn) appendRequestLine(b []byte) []byte {
	req := &c.req
	if req.HeadLen == 0 {
		return appendRawLine(b, (*c.buf)[c.r:c.w])
	}
	b = append(b, req.Method...)
	b = append(b, ' ')
	b = append(b, req.Target...)
	if c.http2 {
		return append(b, " HTTP/2.0"...) // the client's protocol, not the translation's
	}
	b = append(b, " HTTP/1."...)
	return append(b, byte('0'+req.Minor))
}

// appendRawLine appends the first complete line of a head that failed
// to parse, or nothing when the line is incomplete or not text.
func appendRawLine(b, raw []byte) []byte {
	for len(raw) >= 2 && raw[0] == '\r' && raw[1] == '\n' {
		raw = raw[2:]
	}
	end := bytes.IndexByte(raw, '\n')
	if end < 0 {
		return b
	}
	line := bytes.TrimSuffix(raw[:end], []byte{'\r'})
	for _, ch := range line {
		if ch < ' ' || ch == 0x7f {
			return b
		}
	}
	return append(b, line...)
}

// appendUser is %u: the name edge authentication gave the request (an
// API key's name, a token's subject), else the user name of Basic
// credentials, or "-".
func (c *conn) appendUser(b []byte) []byte {
	if id := c.rs.Identity; id != nil && id.Name != "" {
		return append(b, id.Name...)
	}
	v, ok := c.reqHeader("Authorization")
	if !ok || len(v) < 5 || !http1.EqualFold(v[:5], "Basic") {
		return append(b, '-')
	}
	v = bytes.TrimLeft(v[5:], " \t")
	if len(v) > 0 && v[0] == '"' {
		v = bytes.TrimRight(v[1:], " \t")
		if len(v) == 0 || v[len(v)-1] != '"' {
			return append(b, '-')
		}
		v = v[:len(v)-1]
	}
	var dec [768]byte
	if base64.StdEncoding.DecodedLen(len(v)) > len(dec) {
		return append(b, '-')
	}
	n, err := base64.StdEncoding.Decode(dec[:], v)
	if err != nil {
		return append(b, '-')
	}
	user, _, found := bytes.Cut(dec[:n], []byte{':'})
	if !found {
		return append(b, '-')
	}
	return append(b, user...)
}

// appendPathQuery is %U (path) or %q ("?query" or nothing). Pound splits
// the URL at its last '?'.
func (c *conn) appendPathQuery(b []byte, query bool) []byte {
	t := c.req.Target
	i := bytes.LastIndexByte(t, '?')
	if !query {
		if i >= 0 {
			t = t[:i]
		}
		return append(b, t...)
	}
	if i < 0 || i == len(t)-1 {
		return b
	}
	return append(b, t[i:]...)
}

// appendVHost is %v: the Host header without its port (cut at the last
// ':'), else the listener address.
func (c *conn) appendVHost(st *Listener, b []byte) []byte {
	v, ok := c.reqHeader("Host")
	if !ok {
		return c.appendListenerIP(st, b)
	}
	if i := bytes.LastIndexByte(v, ':'); i >= 0 {
		v = v[:i]
	}
	return append(b, v...)
}

// appendObject is %{backend|service|listener}N and ...L.
func (c *conn) appendObject(st *Listener, k logKind, b []byte) []byte {
	svc := c.ex.svc
	switch k {
	case lkBackendName:
		return c.appendBackendName(b)
	case lkServiceName:
		if svc == nil || svc.Name == "" {
			return append(b, '-')
		}
		return append(b, svc.Name...)
	case lkListenerName:
		if st.Cfg == nil || st.Cfg.Name == "" {
			return append(b, '-')
		}
		return append(b, st.Cfg.Name...)
	case lkServiceLocus:
		if svc == nil || svc.Cfg == nil {
			return append(b, '-')
		}
		return append(b, svc.Cfg.Pos.String()...)
	case lkListenerLocus:
		if st.Cfg == nil {
			return append(b, '-')
		}
		return append(b, st.Cfg.Pos.String()...)
	}
	if cb := c.backendConfig(); cb != nil {
		return append(b, cb.Pos.String()...)
	}
	return append(b, '-')
}

// appendBackendName prints the backend as Pound's str_be.
func (c *conn) appendBackendName(b []byte) []byte {
	if c.ex.wafVerdict != nil && (c.ex.be == nil || c.ex.gen) {
		// A WAF rule answered (lbd's form, as Pound's "error:STATUS").
		return c.appendWAFVerdict(append(b, "waf:"...))
	}
	if c.ex.be != nil {
		return append(b, c.ex.be.Address()...)
	}
	if c.ex.svc == nil || c.ex.svc.Special == nil {
		return append(b, '-')
	}
	sp := c.ex.svc.Special
	switch sp.Kind {
	case config.BackendRedirect:
		return append(append(b, "redirect:"...), sp.Rare().Redirect.URL...)
	case config.BackendError:
		b = append(b, "error:"...)
		if sp.Rare().Page != nil {
			b = append(append(b, sp.Rare().Page.Path...), ' ')
		}
		return strconv.AppendInt(b, int64(sp.Rare().Status), 10)
	}
	return append(b, sp.Kind.String()...)
}

// backendConfig finds the config block of the backend that served the
// request (for %{backend}L).
func (c *conn) backendConfig() *config.Backend {
	svc := c.ex.svc
	if svc == nil || svc.Cfg == nil {
		return nil
	}
	if c.ex.be == nil {
		return svc.Special
	}
	for _, list := range [][]*config.Backend{svc.Cfg.Backends, svc.Cfg.Rare().Emergency} {
		for _, cb := range list {
			addr := cb.Address
			if !cb.Unix {
				addr = net.JoinHostPort(cb.Address, strconv.Itoa(cb.Port))
			}
			if addr == c.ex.be.Address() {
				return cb
			}
		}
	}
	return nil
}
