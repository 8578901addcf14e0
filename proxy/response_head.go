package proxy

import (
	"bytes"
	"net/http"
	"strconv"

	"lbd/balancer"
	"lbd/config"
	"lbd/http1"
	"lbd/rules"
)

// Connection handling lines for appendResponseHead.
const (
	connKeep    = iota // persistent: say so only to HTTP/1.0 clients
	connClose          // Connection: close
	connUpgrade        // WebSocket 101
)

var (
	hdrLocation    = "Location"
	hdrContentLoc  = "Content-Location"
	hdrSTS         = "Strict-Transport-Security"
	hdrContentLen  = "Content-Length"
	poundContentLc = "Content-location" // Pound's spelling when it rewrites
)

// appendResponseHead writes the response head for the client: the
// backend's headers but hop-by-hop ones, with the response rules and
// RewriteLocation applied, then the lines lbd adds.
func (c *conn) appendResponseHead(st *Listener, dst []byte, mode int) []byte {
	c.keepReason()
	resp := &c.resp
	e := c.editsFor(st, c.ex.svc)
	var placed inPlace
	if e.zproxy || !hasResponseRules(st, c.ex.svc) {
		dst = appendStatusLine(dst, resp.Status, resp.Reason)
		dst = c.appendResponseHeaders(st, e, mode, &placed, dst)
		return c.appendResponseTail(st, e, mode, &placed, dst)
	}
	// Lua scripts in the rules see and may change the status line.
	x := &c.rs.X
	// A resent request's response starts afresh.
	x.Status, x.Reason, x.DefaultReason = resp.Status, resp.Reason, false
	x.RespBody, x.BodySet = nil, false
	if c.ex.svc != nil {
		x.Service = c.ex.svc
	}
	if c.ex.be != nil {
		x.Tier = balancer.Tier(c.ex.be)
	}
	lines, ok := c.ruledResponse(st, e)
	if !ok {
		return nil
	}
	if c.ex.svc != nil && c.ex.be != nil {
		c.ex.svc.LearnLines(lines, c.ex.be)
	}
	c.ex.newBody = x.BodySet
	if x.DefaultReason {
		dst = appendStatusLine(dst, x.Status, http.StatusText(x.Status))
	} else {
		dst = appendStatusLine(dst, x.Status, x.Reason)
	}
	hasLen := false
	for _, l := range lines {
		if http1.EqualFold(rules.LineName(l), hdrContentLen) {
			if c.ex.newBody {
				continue // the script's body has its own length
			}
			hasLen = true
		}
		dst = append(dst, l...)
		dst = append(dst, crlf...)
	}
	if !hasLen && !c.ex.newBody && !resp.Chunked && resp.BodyKind(c.req.MethodID == http1.MethodHEAD) == http1.BodyLength {
		// The rules removed the body's length (Pound's own test replaces
		// every header): the body then ends with the connection.
		mode, c.ex.closeCl = connClose, true
	}
	return c.appendResponseTail(st, e, mode, &placed, dst)
}

// appendStatusLine writes "HTTP/1.1 status reason".
func appendStatusLine[R ~string | ~[]byte](dst []byte, status int, reason R) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = append(dst, reason...)
	return append(dst, crlf...)
}

// appendResponseHeaders writes the backend's headers, edited.
func (c *conn) appendResponseHeaders(st *Listener, e *HeaderEdits, mode int, placed *inPlace, dst []byte) []byte {
	resp := &c.resp
	for i := range resp.Headers {
		h := &resp.Headers[i]
		if e.zproxy {
			var ok bool
			if dst, ok = c.appendZproxyFraming(e, h, mode, placed, dst); ok {
				continue
			}
		}
		if resp.IsHopByHop(h.Name) || (resp.Chunked && http1.EqualFold(h.Name, hdrContentLen)) {
			continue
		}
		if e.zproxy {
			dst = c.appendZproxyResponseHeader(st, e, h, dst)
		} else {
			dst = c.appendPoundResponseHeader(st, e, h, dst)
		}
	}
	return dst
}

// appendResponseTail adds the framing and the lines lbd adds, and ends
// the head.
func (c *conn) appendResponseTail(st *Listener, e *HeaderEdits, mode int, placed *inPlace, dst []byte) []byte {
	resp := &c.resp
	switch {
	case c.ex.newBody:
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, int64(len(c.rs.X.RespBody)), 10)
		dst = append(dst, crlf...)
	case resp.Chunked && !placed.te:
		dst = append(dst, chunkedLine...)
	}
	switch {
	case placed.conn:
	case mode == connUpgrade:
		dst = append(dst, upgradeLine...)
	case mode == connClose:
		dst = append(dst, closeLine...)
	case c.req.Minor == 0:
		dst = append(dst, keepLine...)
	}
	if mode == connUpgrade && !placed.upgrade {
		dst = append(dst, "Upgrade: websocket\r\n"...)
	}
	if e.zproxy {
		dst = c.appendZproxyResponseTail(st, e, dst)
	} else {
		for _, l := range e.respAdd {
			dst = append(dst, l...)
		}
	}
	dst = append(dst, c.ex.respExtra...)
	return append(dst, crlf...)
}

// inPlace records which framing lines the zproxy dialect wrote where the
// backend had them, so they are not added again at the end.
type inPlace struct{ te, conn, upgrade bool }

// appendZproxyFraming handles the framing headers zproxy relays in
// place: Transfer-Encoding as received when the body is relayed chunked,
// Connection replaced by lbd's own keep-alive or close decision, and a
// 101's Upgrade. It reports whether h was such a header (written, or
// dropped as a duplicate or by RemoveResponseHeader).
func (c *conn) appendZproxyFraming(e *HeaderEdits, h *http1.Header, mode int, p *inPlace, dst []byte) ([]byte, bool) {
	var line string
	switch {
	case http1.EqualFold(h.Name, "Transfer-Encoding"):
		if !c.resp.Chunked || p.te {
			return dst, c.resp.Chunked
		}
		p.te = true
		return appendRaw(dst, h), true
	case http1.EqualFold(h.Name, "Upgrade"):
		if mode != connUpgrade || p.upgrade {
			return dst, false
		}
		p.upgrade = true
		return appendRaw(dst, h), true
	case !http1.EqualFold(h.Name, "Connection"):
		return dst, false
	case p.conn || removedBy(e.respRemove, h, dst[len(dst):]):
		return dst, true
	case mode == connUpgrade:
		line = upgradeLine
	case mode == connClose:
		line = closeLine
	default:
		line = keepLine
	}
	p.conn = true
	return append(dst, line...), true
}

// removedBy reports whether a pattern matches the header's line.
func removedBy(pats []*config.Pattern, h *http1.Header, scratch []byte) bool {
	if len(pats) == 0 {
		return false
	}
	line := lineOf(h, scratch)
	for _, p := range pats {
		if p.Match(line) {
			return true
		}
	}
	return false
}

// appendPoundResponseHeader sends h, unless a response rule removes it;
// Location and Content-Location go through RewriteLocation.
func (c *conn) appendPoundResponseHeader(st *Listener, e *HeaderEdits, h *http1.Header, dst []byte) []byte {
	if removedBy(e.respRemove, h, dst[len(dst):]) {
		return dst
	}
	if e.loc != 0 {
		name := hdrLocation
		isLoc := http1.EqualFold(h.Name, hdrLocation)
		if !isLoc && http1.EqualFold(h.Name, hdrContentLoc) {
			name, isLoc = poundContentLc, true
		}
		if isLoc {
			if vhost, ok := c.reqHeader(hdrHost); ok && len(vhost) > 0 {
				if path, ok := c.poundNeedRewrite(st, e.loc, h.Value, vhost); ok {
					// "Location: %s://%s/%s" (src/http.c backend_response)
					dst = append(dst, name...)
					dst = append(dst, ": "...)
					dst = append(dst, st.Scheme...)
					dst = append(dst, "://"...)
					dst = append(dst, vhost...)
					dst = append(dst, '/')
					dst = append(dst, path...)
					return append(dst, crlf...)
				}
			}
		}
	}
	return appendRaw(dst, h)
}

// appendZproxyResponseHeader sends h in place unless zproxy removes it
// or re-adds it at the end (replaced headers, rewritten locations, and
// the backend's own Strict-Transport-Security when the service sets it).
func (c *conn) appendZproxyResponseHeader(st *Listener, e *HeaderEdits, h *http1.Header, dst []byte) []byte {
	if c.zproxyRespMoved(e, h, dst[len(dst):]) {
		return dst
	}
	return appendRaw(dst, h)
}

// zproxyRespMoved reports whether h is not sent in place.
func (c *conn) zproxyRespMoved(e *HeaderEdits, h *http1.Header, scratch []byte) bool {
	if removedBy(e.respRemove, h, scratch) || zproxyReplacement(e.respReplace, h, scratch) >= 0 {
		return true
	}
	if e.sts != "" && http1.EqualFold(h.Name, hdrSTS) {
		return true
	}
	return c.zproxyLocationApplies(e, h)
}

func (c *conn) zproxyLocationApplies(e *HeaderEdits, h *http1.Header) bool {
	if !http1.EqualFold(h.Name, hdrLocation) && !http1.EqualFold(h.Name, hdrContentLoc) {
		return false
	}
	if _, ok := backendAddr(c.ex.be); !ok || (e.loc == 0 && !e.locURL) {
		return false
	}
	_, ok := parseLocation(h.Value)
	return ok
}

// appendZproxyResponseTail adds what zproxy appends: replaced headers,
// rewritten locations, AddResponseHeader lines, and STS.
func (c *conn) appendZproxyResponseTail(st *Listener, e *HeaderEdits, dst []byte) []byte {
	for i := range c.resp.Headers {
		h := &c.resp.Headers[i]
		if c.resp.IsHopByHop(h.Name) || removedBy(e.respRemove, h, dst[len(dst):]) {
			continue
		}
		if r := zproxyReplacement(e.respReplace, h, dst[len(dst):]); r >= 0 {
			dst = appendReplaced(dst, h, &e.respReplace[r])
			continue
		}
		if c.zproxyLocationApplies(e, h) {
			dst = c.appendZproxyLocation(st, e, h, dst)
		}
	}
	for _, l := range e.respAdd {
		dst = append(dst, l...)
	}
	return append(dst, e.sts...)
}

// appendZproxyLocation is zproxy's rewriteHeaderLocation: a Location to
// the backend keeps its scheme, one to the listener with the wrong port
// or scheme gets the other scheme; either way the host becomes the
// request's Host. With RewriteLocation's second argument the part of
// the path RewriteUrl changed is put back.
func (c *conn) appendZproxyLocation(st *Listener, e *HeaderEdits, h *http1.Header, dst []byte) []byte {
	loc, _ := parseLocation(h.Value)
	be, _ := backendAddr(c.ex.be)
	dst = append(dst, h.Name...)
	dst = append(dst, ": "...)
	vhost, _ := c.reqHeader(hdrHost)
	prefix := ""
	if e.loc != 0 {
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
			case e.loc == 1 && (port != c.listenerPort(st) || string(loc.proto) != st.Scheme) &&
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
	return append(c.appendUnrewrittenPath(e, dst, loc.path), crlf...)
}

// appendUnrewrittenPath appends path, with the prefix RewriteUrl wrote
// replaced by the original one when RewriteLocation asks for it.
func (c *conn) appendUnrewrittenPath(e *HeaderEdits, dst, path []byte) []byte {
	if !e.locURL || len(e.rewriteURL) == 0 {
		return append(dst, path...)
	}
	mark := len(dst)
	tmp, tail := c.appendRewrittenTarget(e, dst)
	if tail < 0 || tail > len(c.req.Target) {
		return append(dst, path...)
	}
	repl := tmp[mark : len(tmp)-tail]
	orig := c.req.Target[:len(c.req.Target)-tail]
	if len(repl) == 0 || !bytes.HasPrefix(path, repl) {
		return append(dst, path...)
	}
	// repl aliases the spare room being overwritten: skip it first.
	rest := path[len(repl):]
	dst = append(dst[:mark], orig...)
	return append(dst, rest...)
}
