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
// the listener or the service has some, or a FallThrough service already
// changed the request during routing.
func (c *conn) hasRequestRules(st *Listener, svc *service.Service) bool {
	return !st.ReqRules.Empty() || !svc.ReqRules.Empty() || c.rs.Req.URLChanged || c.rs.Req.HeadersChanged
}

// appendRuledRequest writes the request line and headers after running
// the request rules; an expansion error marks the exchange for a 500.
func (c *conn) appendRuledRequest(st *Listener, svc *service.Service, dst []byte) []byte {
	m := &c.rs.Req
	c.forwardedLines(st)
	m.Lines, c.rwLines = c.rwLines, m.Lines
	c.ex.forwarded = true
	err := st.ReqRules.Rewrite(&c.rs, m)
	if err == nil {
		err = svc.ReqRules.Rewrite(&c.rs, m)
	}
	if err != nil {
		st.diag(err)
		c.ex.badExpand = true
	}
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
	for _, l := range m.Lines {
		dst = append(dst, l...)
		dst = append(dst, crlf...)
	}
	dst = c.appendFraming(dst, true)
	return append(dst, crlf...)
}

// forwardedLines renders the request's current header lines as Pound
// forwards them (hop-by-hop fields dropped, the client appended to the
// first X-Forwarded-For, -Proto and -Port replaced or added, the TLS
// headers added) into rwbuf, one entry of rwLines per line.
func (c *conn) forwardedLines(st *Listener) {
	c.rwbuf, c.rwLines = c.rwbuf[:0], c.rwLines[:0]
	var xff, proto, port bool
	for _, l := range c.rs.Req.Lines {
		name := rules.LineName(l)
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
	start := len(c.rwbuf)
	if st.Forwarded {
		p := fwdPlan{xff: -1, proto: -1, port: -1, on: true, withPort: c.client.IsValid()}
		if xff {
			p.xff = 0
		}
		if proto {
			p.proto = 0
		}
		if port {
			p.port = 0
		}
		c.rwbuf = c.appendMissingForwarded(st, &p, c.rwbuf)
	}
	c.rwbuf = c.appendSSLHeaders(c.rwbuf)
	c.rwLines = splitLines(c.rwLines, c.rwbuf, start)
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
		if j := bytes.Index(buf[i:], []byte(crlf)); j >= 0 {
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

// hasResponseRules reports whether the service or listener has response
// rules.
func hasResponseRules(st *Listener, svc *service.Service) bool {
	return !st.RespRules.Empty() || (svc != nil && !svc.RespRules.Empty())
}

// hasResponseScripts reports whether the response rules may call Lua:
// then the request's Lua state, its stash and its body are kept until
// the response is sent, and a script may ask to resend the request.
func hasResponseScripts(st *Listener, svc *service.Service) bool {
	return st.RespRules.HasScripts() || svc.RespScripts()
}

// ruledResponseLines runs the response rules (the service's, then the
// listener's, as Pound 4.12 does) over lines and returns the result.
func (c *conn) ruledResponseLines(st *Listener, lines [][]byte) ([][]byte, error) {
	m := &c.rs.Resp
	m.Lines = append(m.Lines[:0], lines...)
	var err error
	if c.ex.svc != nil {
		err = c.ex.svc.RespRules.Rewrite(&c.rs, m)
	}
	if err == nil {
		err = st.RespRules.Rewrite(&c.rs, m)
	}
	return m.Lines, err
}

// ruledResponse runs the response rules over the backend's headers and
// returns the lines to send; ok is false when a rule failed (Pound
// answers 500 instead of the response). The lines are built in buffers
// of their own: the request's forwarded lines (rwbuf) stay valid for the
// scripts and for a resend.
func (c *conn) ruledResponse(st *Listener, e *HeaderEdits) ([][]byte, bool) {
	resp := &c.resp
	c.rsbuf, c.rsLines = c.rsbuf[:0], c.rsLines[:0]
	for i := range resp.Headers {
		h := &resp.Headers[i]
		if resp.IsHopByHop(h.Name) || (resp.Chunked && http1.EqualFold(h.Name, hdrContentLen)) {
			continue
		}
		start := len(c.rsbuf)
		c.rsbuf = c.appendPoundResponseHeader(st, e, h, c.rsbuf)
		c.rsLines = splitLines(c.rsLines, c.rsbuf, start)
	}
	lines, err := c.ruledResponseLines(st, c.rsLines)
	if err != nil {
		st.diag(err)
		return nil, false
	}
	return lines, true
}
