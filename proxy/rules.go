package proxy

import (
	"bytes"

	"lbd/http1"
	"lbd/rules"
	"lbd/service"
)

// Pound 4 applies a request's rules after it chose the backend and added
// the forwarding headers (src/http.c send_to_backend): the listener's
// rules, then the service's, on the header list as it would be sent, so
// DeleteHeader can remove X-Forwarded-For and later conditions see what
// earlier actions changed. The proxy renders that list into rwbuf, lets
// the program edit it, and writes the head from the result. Requests
// without rules never come here.

// hasRequestRules reports whether the head must go through the rules:
// the listener, the service or the pair's edits have some, or a
// FallThrough service already changed the request during routing.
func (c *conn) hasRequestRules(st *Listener, svc *service.Service, e *HeaderEdits) bool {
	return !st.ReqRules.Empty() || !svc.ReqRules.Empty() || !e.Req.Empty() ||
		c.rs.Req.URLChanged || c.rs.Req.HeadersChanged
}

// appendRuledRequest writes the request line and headers after running
// the request rules; an expansion error marks the exchange for a 500.
func (c *conn) appendRuledRequest(st *Listener, svc *service.Service, e *HeaderEdits, dst []byte) []byte {
	m := &c.rs.Req
	c.forwardedLines(st)
	m.Lines, c.rwLines = c.rwLines, m.Lines
	err := st.ReqRules.Rewrite(&c.rs, m)
	if err == nil {
		err = svc.ReqRules.Rewrite(&c.rs, m)
	}
	if err == nil {
		err = e.Req.Rewrite(&c.rs, m)
	}
	if err != nil {
		st.diag(err)
		c.ex.badExpand = true
	}
	return c.renderRuledRequest(st, dst)
}

// renderRuledRequest writes the head of a request the rules edited: the
// request line, the lines before the place the program marked, lbd's
// framing lines, the rest (and the X-SSL-* lines when they go last).
func (c *conn) renderRuledRequest(st *Listener, dst []byte) []byte {
	m := &c.rs.Req
	if m.URLChanged {
		dst = append(dst, c.req.Method...)
		dst = append(dst, ' ')
		dst = append(dst, m.URL...)
		dst = append(dst, " HTTP/1."...)
		dst = append(dst, byte('0'+c.req.Minor))
		dst = append(dst, crlf...)
	} else {
		dst = c.appendForwardLine(dst, c.req.Target)
	}
	before, after := m.Split()
	dst = appendLines(dst, before)
	dst = c.appendFraming(dst, !m.BindHost)
	dst = appendLines(dst, after)
	if st.TLSHeadersLast {
		dst = c.appendSSLHeaders(dst)
	}
	return append(dst, crlf...)
}

// appendLines writes header lines, each ended by CRLF.
func appendLines(dst []byte, lines [][]byte) []byte {
	for _, l := range lines {
		dst = append(dst, l...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// forwardedLines renders the request's current header lines as Pound
// forwards them (hop-by-hop fields dropped; with Forwarded the client
// appended to the first X-Forwarded-For, -Proto and -Port replaced or
// added; the TLS headers added unless they go last) into rwbuf, one
// entry of rwLines per line.
func (c *conn) forwardedLines(st *Listener) {
	c.rwbuf, c.rwLines = c.rwbuf[:0], c.rwLines[:0]
	var xff, proto, port bool
	// Lines no rule has touched yet are the parsed headers, names known.
	parsed := !c.rs.Req.HeadersChanged && len(c.rs.Req.Lines) == len(c.req.Headers)
	for i, l := range c.rs.Req.Lines {
		var name []byte
		if parsed {
			name = c.req.Headers[i].Name
		} else {
			name = rules.LineName(l)
		}
		if c.req.IsHopByHop(name) || http1.EqualFold(name, hdrExpect) ||
			(c.req.AbsoluteForm && http1.EqualFold(name, hdrHost)) || c.forgedSSL(name) {
			continue
		}
		start := len(c.rwbuf)
		switch {
		case !st.Forwarded || !forwardingName(name):
			// Unchanged: the line stays where it was received.
			c.rwLines = append(c.rwLines, l)
			continue
		case !xff && http1.EqualFold(name, hdrXFF):
			xff = true
			v := bytes.TrimSpace(l[len(name)+1:])
			c.rwbuf = append(c.rwbuf, name...)
			c.rwbuf = append(c.rwbuf, ": "...)
			if len(v) > 0 {
				c.rwbuf = append(c.rwbuf, v...)
				c.rwbuf = append(c.rwbuf, ", "...)
			}
			c.rwbuf = appendAddr(c.rwbuf, c.client)
		case !proto && http1.EqualFold(name, hdrXFProto):
			proto = true
			c.rwbuf = appendLine(c.rwbuf, hdrXFProto, st.Scheme)
			c.rwbuf = c.rwbuf[:len(c.rwbuf)-len(crlf)]
		case !port && c.client.IsValid() && http1.EqualFold(name, hdrXFPort):
			port = true
			c.rwbuf = c.appendXFPort(st, c.rwbuf)
			c.rwbuf = c.rwbuf[:len(c.rwbuf)-len(crlf)]
		default:
			c.rwbuf = append(c.rwbuf, l...)
		}
		c.rwLines = append(c.rwLines, c.rwbuf[start:len(c.rwbuf):len(c.rwbuf)])
	}
	if st.Forwarded {
		c.addMissingForwarded(st, xff, proto, port)
	}
	if !st.TLSHeadersLast {
		start := len(c.rwbuf)
		if c.rwbuf = c.appendSSLHeaders(c.rwbuf); len(c.rwbuf) > start {
			c.splitLines(start)
		}
	}
}

// addMissingForwarded adds the X-Forwarded-* lines the request did not
// have, as appendMissingForwarded writes them, one rwLines entry each.
func (c *conn) addMissingForwarded(st *Listener, xff, proto, port bool) {
	if !xff {
		start := len(c.rwbuf)
		c.rwbuf = append(c.rwbuf, hdrXFF...)
		c.rwbuf = append(c.rwbuf, ": "...)
		c.rwbuf = appendAddr(c.rwbuf, c.client)
		c.addLine(start)
	}
	if !proto {
		start := len(c.rwbuf)
		c.rwbuf = append(c.rwbuf, hdrXFProto...)
		c.rwbuf = append(c.rwbuf, ": "...)
		c.rwbuf = append(c.rwbuf, st.Scheme...)
		c.addLine(start)
	}
	if !port && c.client.IsValid() {
		start := len(c.rwbuf)
		c.rwbuf = c.appendXFPort(st, c.rwbuf)
		c.rwbuf = c.rwbuf[:len(c.rwbuf)-len(crlf)]
		c.addLine(start)
	}
}

// addLine makes rwbuf[start:] (a line without its CRLF) an entry of
// rwLines.
func (c *conn) addLine(start int) {
	c.rwLines = append(c.rwLines, c.rwbuf[start:len(c.rwbuf):len(c.rwbuf)])
}

// forwardingName reports whether name is one of the X-Forwarded-*
// headers the forwarding code rewrites.
func forwardingName(name []byte) bool {
	return http1.EqualFold(name, hdrXFF) || http1.EqualFold(name, hdrXFProto) || http1.EqualFold(name, hdrXFPort)
}

// splitLines adds the CRLF-terminated lines of rwbuf[start:] to rwLines;
// a line starting with a blank continues the previous one (the folded
// X-SSL-certificate).
func (c *conn) splitLines(start int) {
	buf := c.rwbuf
	first, last := -1, -1
	for i := start; i < len(buf); {
		end := len(buf)
		if j := bytes.Index(buf[i:], crlfBytes); j >= 0 {
			end = i + j
		}
		cont := end > i && (buf[i] == ' ' || buf[i] == '\t') && first >= 0
		if !cont {
			if first >= 0 && last > first {
				c.rwLines = append(c.rwLines, buf[first:last:last])
			}
			first = i
		}
		last = end
		i = end + len(crlf)
	}
	if first >= 0 && last > first {
		c.rwLines = append(c.rwLines, buf[first:last:last])
	}
}

// hasResponseRules reports whether the service, the listener or the
// pair's edits have response rules.
func hasResponseRules(st *Listener, svc *service.Service, e *HeaderEdits) bool {
	return !st.RespRules.Empty() || (svc != nil && !svc.RespRules.Empty()) || !e.Resp.Empty()
}

// ruledResponseLines runs the response rules (the service's, then the
// listener's, as Pound 4.12 does, then the pair's edits) over lines and
// returns the result in c.rs.Resp.
func (c *conn) ruledResponseLines(st *Listener, e *HeaderEdits, lines [][]byte) error {
	m := &c.rs.Resp
	m.Reset()
	m.Lines = append(m.Lines, lines...)
	var err error
	if c.ex.svc != nil {
		err = c.ex.svc.RespRules.Rewrite(&c.rs, m)
	}
	if err == nil {
		err = st.RespRules.Rewrite(&c.rs, m)
	}
	if err == nil {
		c.locSt = st
		err = e.Resp.Rewrite(&c.rs, m)
	}
	return err
}

// appendRuledResponse writes the response headers after the response
// rules edited them, with the framing where the program put the end of
// the received lines; ok is false when an expansion failed (Pound
// answers 500 instead of the response).
func (c *conn) appendRuledResponse(st *Listener, e *HeaderEdits, mode int, dst []byte) ([]byte, bool) {
	resp := &c.resp
	c.rwbuf, c.rwLines = c.rwbuf[:0], c.rwLines[:0]
	var placed inPlace
	for i := range resp.Headers {
		h := &resp.Headers[i]
		start := len(c.rwbuf)
		if st.FramingInPlace {
			var ok bool
			if c.rwbuf, ok = c.appendFramingInPlace(h, mode, &placed, c.rwbuf); ok {
				c.splitLines(start)
				continue
			}
		}
		if resp.IsHopByHop(h.Name) || (resp.Chunked && http1.EqualFold(h.Name, hdrContentLen)) {
			continue
		}
		c.rwbuf = c.appendPoundResponseHeader(st, e, h, c.rwbuf)
		c.splitLines(start)
	}
	if err := c.ruledResponseLines(st, e, c.rwLines); err != nil {
		st.diag(err)
		return dst, false
	}
	before, after := c.rs.Resp.Split()
	dst = appendLines(dst, before)
	if st.FramingInPlace {
		// The rules may have removed a framing line written in place.
		placed = framingPlaced(before)
	}
	dst = c.appendFramingTail(mode, &placed, dst)
	return appendLines(dst, after), true
}

// framingPlaced finds the framing lines among lines.
func framingPlaced(lines [][]byte) inPlace {
	var p inPlace
	for _, l := range lines {
		name := rules.LineName(l)
		switch {
		case http1.EqualFold(name, "Transfer-Encoding"):
			p.te = true
		case http1.EqualFold(name, "Connection"):
			p.conn = true
		case http1.EqualFold(name, "Upgrade"):
			p.upgrade = true
		}
	}
	return p
}
