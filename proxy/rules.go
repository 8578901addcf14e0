package proxy

import (
	"bytes"
	"net/http"

	"lbd/balancer"
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

// programRunner runs one request program over m. The proxy's is nil
// (Program.Rewrite); the routing explainer passes one that traces the
// steps, so the head it shows is built by the code that sends it.
type programRunner func(p *rules.Program, m *rules.Message) error

// appendRuledRequest writes the request line and headers after running
// the request rules: the listener's, the service's, then the pair's
// edits. An expansion error marks the exchange for a 500 (and is logged
// unless a dry run's run saw it).
func (c *conn) appendRuledRequest(st *Listener, svc *service.Service, e *HeaderEdits, run programRunner, dst []byte) []byte {
	c.ruleForwardedLines(st)
	if err := c.runRequestPrograms(run, st.ReqRules, svc.ReqRules, e.Req); err != nil {
		if run == nil {
			st.diag(err)
		}
		c.ex.badExpand = true
	}
	return c.renderRuledRequest(st, dst)
}

// ruleForwardedLines makes the request's lines the ones it is forwarded
// with (forwardedLines), for the programs to edit.
func (c *conn) ruleForwardedLines(st *Listener) {
	m := &c.rs.Req
	c.forwardedLines(st)
	m.Lines, c.rwLines = c.rwLines, m.Lines
	c.ex.forwarded = true
}

// runRequestPrograms runs progs over the request in order, through run
// when it is not nil, and stops at the first error.
func (c *conn) runRequestPrograms(run programRunner, progs ...*rules.Program) error {
	m := &c.rs.Req
	for _, p := range progs {
		var err error
		if run != nil {
			err = run(p, m)
		} else {
			err = p.Rewrite(c.rs, m)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
			c.rwLines = splitLines(c.rwLines, c.rwbuf, start)
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

// splitLines adds the CRLF-terminated lines of buf[start:] to lines;
// a line starting with a blank continues the previous one (the folded
// X-SSL-certificate).
func splitLines(lines [][]byte, buf []byte, start int) [][]byte {
	first, last := -1, -1
	for i := start; i < len(buf); {
		end := len(buf)
		if j := bytes.Index(buf[i:], crlfBytes); j >= 0 {
			end = i + j
		}
		cont := end > i && (buf[i] == ' ' || buf[i] == '\t') && first >= 0
		if !cont {
			if first >= 0 && last > first {
				lines = append(lines, buf[first:last:last])
			}
			first = i
		}
		last = end
		i = end + len(crlf)
	}
	if first >= 0 && last > first {
		lines = append(lines, buf[first:last:last])
	}
	return lines
}

// hasResponseRules reports whether the service, the listener or the
// pair's edits have response rules.
func hasResponseRules(st *Listener, svc *service.Service, e *HeaderEdits) bool {
	return !st.RespRules.Empty() || (svc != nil && !svc.RespRules.Empty()) || !e.Resp.Empty()
}

// hasResponseScripts reports whether the response rules may call Lua:
// then the request's Lua state, its stash and its body are kept until
// the response is sent, and a script may ask to resend the request.
func hasResponseScripts(st *Listener, svc *service.Service) bool {
	return st.RespRules.HasScripts() || svc.RespScripts()
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
		err = c.ex.svc.RespRules.Rewrite(c.rs, m)
	}
	if err == nil {
		err = st.RespRules.Rewrite(c.rs, m)
	}
	if err == nil {
		c.locSt = st
		err = e.Resp.Rewrite(c.rs, m)
	}
	return err
}

// appendRuledResponse writes the response status line and headers after
// the response rules edited them (a Lua script may change the status,
// the reason and the body), with the framing where the program put the
// end of the received lines; ok is false when a rule failed (Pound
// answers 500 instead of the response). The lines are built in buffers
// of their own: the request's forwarded lines (rwbuf) stay valid for the
// scripts and for a resend.
func (c *conn) appendRuledResponse(st *Listener, e *HeaderEdits, mode int, dst []byte) ([]byte, bool) {
	resp := &c.resp
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
	var placed inPlace
	c.rsbuf, c.rsLines = c.rsbuf[:0], c.rsLines[:0]
	for i := range resp.Headers {
		h := &resp.Headers[i]
		start := len(c.rsbuf)
		if st.FramingInPlace {
			var ok bool
			if c.rsbuf, ok = c.appendFramingInPlace(h, mode, &placed, c.rsbuf); ok {
				c.rsLines = splitLines(c.rsLines, c.rsbuf, start)
				continue
			}
		}
		if resp.IsHopByHop(h.Name) || (resp.Chunked && http1.EqualFold(h.Name, hdrContentLen)) {
			continue
		}
		c.rsbuf = c.appendPoundResponseHeader(st, e, h, c.rsbuf)
		c.rsLines = splitLines(c.rsLines, c.rsbuf, start)
	}
	if err := c.ruledResponseLines(st, e, c.rsLines); err != nil {
		st.diag(err)
		return dst, false
	}
	m := &c.rs.Resp
	if c.ex.svc != nil && c.ex.be != nil && (!st.RespRules.Empty() || !c.ex.svc.RespRules.Empty()) {
		// Pound learns sessions after its response rules (zproxy's edits
		// alone leave learning where it was: before them).
		c.ex.svc.LearnLines(m.Lines, c.ex.be)
	}
	c.ex.newBody = x.BodySet
	if x.DefaultReason {
		dst = appendStatusLine(dst, x.Status, http.StatusText(x.Status))
	} else {
		dst = appendStatusLine(dst, x.Status, x.Reason)
	}
	before, after := m.Split()
	if !c.ex.newBody && !resp.Chunked && resp.BodyKind(c.req.MethodID == http1.MethodHEAD) == http1.BodyLength &&
		!hasLine(m.Lines, hdrContentLen) {
		// The rules removed the body's length (Pound's own test replaces
		// every header): the body then ends with the connection.
		mode, c.ex.closeCl = connClose, true
		closeInPlace(before)
	}
	dst = c.appendResponseLines(dst, before)
	if st.FramingInPlace {
		// The rules may have removed a framing line written in place.
		placed = framingPlaced(before)
	}
	dst = c.appendFramingTail(mode, &placed, dst)
	return c.appendResponseLines(dst, after), true
}

// appendResponseLines writes response header lines; a Content-Length
// goes when a script replaced the body, which has its own.
func (c *conn) appendResponseLines(dst []byte, lines [][]byte) []byte {
	for _, l := range lines {
		if c.ex.newBody && http1.EqualFold(rules.LineName(l), hdrContentLen) {
			continue
		}
		dst = append(dst, l...)
		dst = append(dst, crlf...)
	}
	return dst
}

// hasLine reports whether a line is named name.
func hasLine(lines [][]byte, name string) bool {
	for _, l := range lines {
		if http1.EqualFold(rules.LineName(l), name) {
			return true
		}
	}
	return false
}

// closeLineBytes is closeLine without its CRLF.
var closeLineBytes = []byte(closeLine[:len(closeLine)-len(crlf)])

// closeInPlace makes a Connection line written in place
// (Listener.FramingInPlace) say close.
func closeInPlace(lines [][]byte) {
	for i, l := range lines {
		if http1.EqualFold(rules.LineName(l), "Connection") {
			lines[i] = closeLineBytes
		}
	}
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
