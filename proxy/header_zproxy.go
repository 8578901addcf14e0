package proxy

import (
	"bytes"

	"lbd/config"
	"lbd/http1"
)

// zproxy builds the backend request differently from Pound
// (http_manager.cpp validateRequest, http_request.cpp): RewriteUrl edits
// the request line; received headers stay in place, but a header
// matching a RemoveRequestHeader pattern (the whole line) is dropped and
// the first ReplaceHeader rule whose name pattern matches a line
// replaces its value, the new line moving behind the received ones;
// X-Forwarded-For follows, rebuilt from the received values and the
// client address; then AddRequestHeader lines; last the Host and
// Destination lines RewriteHost and RewriteDestination rewrite once the
// backend is known (bindBackend).

func (c *conn) appendZproxyRequest(st *Listener, e *HeaderEdits, dst []byte) []byte {
	req := &c.req
	dst = append(dst, req.Method...)
	dst = append(dst, ' ')
	start := len(dst)
	dst, _ = c.appendRewrittenTarget(e, dst)
	if e.trimParm {
		dst = trimParam(dst, start)
	}
	dst = append(dst, " HTTP/1."...)
	dst = append(dst, byte('0'+req.Minor))
	dst = append(dst, crlf...)
	for i := range req.Headers {
		h := &req.Headers[i]
		if c.zproxyDrops(e, h, dst[len(dst):]) || zproxyReplacement(e.reqReplace, h, dst[len(dst):]) >= 0 ||
			c.zproxyMovesLast(e, h) {
			continue
		}
		dst = appendRaw(dst, h)
	}
	dst = c.appendFraming(dst, !e.rewriteHost)
	for i := range req.Headers {
		h := &req.Headers[i]
		if c.zproxyDrops(e, h, dst[len(dst):]) {
			continue
		}
		if r := zproxyReplacement(e.reqReplace, h, dst[len(dst):]); r >= 0 {
			dst = appendReplaced(dst, h, &e.reqReplace[r])
		}
	}
	if st.Forwarded {
		dst = c.appendZproxyXFF(dst)
	}
	for _, l := range e.reqAdd {
		dst = append(dst, l...)
	}
	if e.rewriteHost {
		// bindBackend puts the backend address here.
		dst = appendLine(dst, hdrHost, "")
	}
	if e.rewriteDest {
		if v, ok := c.reqHeader(hdrDest); ok {
			dst = appendLine(dst, hdrDest, v)
		}
	}
	dst = c.appendSSLHeaders(dst)
	return append(dst, crlf...)
}

// trimParam removes the ";param" of the target at dst[start:], up to
// the query. (zproxy cuts up to the end of the target, query included;
// lbd keeps the query, which is the client's, not the session's.)
func trimParam(dst []byte, start int) []byte {
	target := dst[start:]
	semi := bytes.IndexByte(target, ';')
	if semi < 0 {
		return dst
	}
	end := len(target)
	if q := bytes.IndexByte(target[semi:], '?'); q >= 0 {
		end = semi + q
	}
	n := copy(target[semi:], target[end:])
	return dst[:start+semi+n]
}

// zproxyMovesLast reports whether h is one of the headers zproxy
// re-creates at the end of the head: the Host of an absolute-form
// target or one RewriteHost replaces, a Destination to rewrite.
func (c *conn) zproxyMovesLast(e *HeaderEdits, h *http1.Header) bool {
	switch {
	case http1.EqualFold(h.Name, hdrHost):
		return c.req.AbsoluteForm || e.rewriteHost
	case http1.EqualFold(h.Name, hdrDest):
		return e.rewriteDest
	}
	return false
}

// zproxyDrops reports whether received header h is not sent in place.
func (c *conn) zproxyDrops(e *HeaderEdits, h *http1.Header, scratch []byte) bool {
	if c.req.IsHopByHop(h.Name) || http1.EqualFold(h.Name, hdrExpect) ||
		http1.EqualFold(h.Name, hdrXFF) || c.forgedSSL(h.Name) {
		return true
	}
	if len(e.reqRemove) == 0 {
		return false
	}
	line := lineOf(h, scratch)
	for _, p := range e.reqRemove {
		if p.Match(line) {
			return true
		}
	}
	return false
}

// zproxyReplacement returns the first ReplaceHeader rule that applies to
// h (its name pattern matches the line and its match pattern the
// value), or -1.
func zproxyReplacement(rules []config.ReplaceHeader, h *http1.Header, scratch []byte) int {
	if len(rules) == 0 {
		return -1
	}
	line := lineOf(h, scratch)
	for i := range rules {
		r := &rules[i]
		if r.Name != nil && r.Name.Match(line) && r.Match != nil && r.Match.Re != nil && r.Match.Re.Match(h.Value) {
			return i
		}
	}
	return -1
}

func appendReplaced(dst []byte, h *http1.Header, r *config.ReplaceHeader) []byte {
	dst = append(dst, h.Name...)
	dst = append(dst, ": "...)
	dst, _, _ = zproxyReplace(dst, h.Value, r.Match, r.Replacement)
	return append(dst, crlf...)
}

// appendZproxyXFF writes X-Forwarded-For: the received values joined by
// ", ", then the client address.
func (c *conn) appendZproxyXFF(dst []byte) []byte {
	dst = append(dst, hdrXFF...)
	dst = append(dst, ": "...)
	for i := range c.req.Headers {
		h := &c.req.Headers[i]
		if http1.EqualFold(h.Name, hdrXFF) && len(h.Value) > 0 {
			dst = append(dst, h.Value...)
			dst = append(dst, ", "...)
		}
	}
	if c.client.IsValid() {
		dst = c.client.AppendTo(dst)
	}
	return append(dst, crlf...)
}

// appendRewrittenTarget appends the request target after zproxy's
// RewriteUrl rules (each applied once, in order; "last" stops after a
// rule that matched). tail is the length of the end of the target no
// rule changed, for undoing the rewrite in Location (-1: no rewrite).
func (c *conn) appendRewrittenTarget(e *HeaderEdits, dst []byte) ([]byte, int) {
	req := &c.req
	start := len(dst)
	if req.AbsoluteForm {
		dst = append(dst, req.Path...)
		if req.Query != nil {
			dst = append(append(dst, '?'), req.Query...)
		}
	} else {
		dst = append(dst, req.Target...)
	}
	tail := -1
	for i := range e.rewriteURL {
		r := &e.rewriteURL[i]
		cur := dst[start:]
		mark := len(dst)
		out, off, ok := zproxyReplace(dst, cur, r.Pattern, r.Replacement)
		if !ok {
			continue
		}
		res := out[mark:]
		if t := len(res) - off; tail < 0 || t < tail {
			tail = t
		}
		dst = append(out[:start], res...)
		if r.Last {
			break
		}
	}
	return dst, tail
}

// zproxyGenerated passes a reply lbd wrote itself (an error page, a
// redirect) through the response rules, as zproxy's replyError and
// replyRedirect do with validateResponse: RemoveResponseHeader drops
// lines, ReplaceHeader moves the replaced line behind the others,
// AddResponseHeader lines and Strict-Transport-Security come last. The
// result is built in c.out, which holds nothing else at this point.
func (c *conn) zproxyGenerated(st *Listener, reply []byte) []byte {
	e := c.editsFor(st, c.ex.svc)
	if len(e.respRemove) == 0 && len(e.respReplace) == 0 && len(e.respAdd) == 0 && e.sts == "" {
		return reply
	}
	end := bytes.Index(reply, []byte("\r\n\r\n"))
	if end < 0 {
		return reply
	}
	head, body := reply[:end+2], reply[end+4:]
	statusEnd := bytes.Index(head, []byte(crlf)) + 2
	dst := append(c.out[:0], head[:statusEnd]...)
	var replaced []byte
	for rest := head[statusEnd:]; len(rest) > 0; {
		n := bytes.Index(rest, []byte(crlf))
		line := rest[:n]
		rest = rest[n+2:]
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			// Not a header line (lbd's own replies have none such): kept
			// as it is, no rule can match it.
			dst = append(append(dst, line...), crlf...)
			continue
		}
		h := http1.Header{Name: name, Value: bytes.TrimLeft(value, " \t")}
		switch r := zproxyReplacement(e.respReplace, &h, dst[len(dst):]); {
		case removedBy(e.respRemove, &h, dst[len(dst):]):
		case r >= 0:
			replaced = appendReplaced(replaced, &h, &e.respReplace[r])
		case e.sts != "" && http1.EqualFold(h.Name, hdrSTS):
		default:
			dst = append(append(dst, line...), crlf...)
		}
	}
	dst = append(dst, replaced...)
	for _, l := range e.respAdd {
		dst = append(dst, l...)
	}
	dst = append(dst, e.sts...)
	dst = append(dst, crlf...)
	c.out = append(dst, body...)
	return c.out
}
