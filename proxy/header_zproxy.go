package proxy

import (
	"lbd/config"
	"lbd/http1"
)

// zproxy builds the backend request differently from Pound
// (http_manager.cpp validateRequest, http_handler.c): RewriteUrl edits
// the request line; Host goes first; a header matching a
// RemoveRequestHeader pattern (the whole line) is dropped; the first
// ReplaceHeader rule whose name pattern matches a line replaces its
// value, and the new line moves to the end; AddRequestHeader lines
// follow; X-Forwarded-For is rebuilt last from the received values and
// the client address.

func (c *conn) appendZproxyRequest(st *Listener, e *HeaderEdits, dst []byte) []byte {
	req := &c.req
	dst = append(dst, req.Method...)
	dst = append(dst, ' ')
	dst, _ = c.appendRewrittenTarget(e, dst)
	dst = append(dst, " HTTP/1."...)
	dst = append(dst, byte('0'+req.Minor))
	dst = append(dst, crlf...)
	if host := c.zproxyHost(); host != nil || e.rewriteHost {
		// With RewriteHost, bindBackend puts the backend address here.
		dst = appendLine(dst, hdrHost, host)
	}
	for i := range req.Headers {
		h := &req.Headers[i]
		if c.zproxyDrops(e, h, dst[len(dst):]) || zproxyReplacement(e.reqReplace, h, dst[len(dst):]) >= 0 {
			continue
		}
		dst = appendRaw(dst, h)
	}
	dst = c.appendFraming(dst)
	for i := range req.Headers {
		h := &req.Headers[i]
		if c.zproxyDrops(e, h, dst[len(dst):]) {
			continue
		}
		if r := zproxyReplacement(e.reqReplace, h, dst[len(dst):]); r >= 0 {
			dst = appendReplaced(dst, h, &e.reqReplace[r])
		}
	}
	for _, l := range e.reqAdd {
		dst = append(dst, l...)
	}
	if st.Forwarded {
		dst = c.appendZproxyXFF(dst)
	}
	dst = c.appendSSLHeaders(dst)
	return append(dst, crlf...)
}

// zproxyHost is the Host line's value: the header, or the authority of
// an absolute-form target.
func (c *conn) zproxyHost() []byte {
	if c.req.AbsoluteForm {
		return c.req.Host
	}
	if v, ok := c.reqHeader(hdrHost); ok {
		return v
	}
	return nil
}

// zproxyDrops reports whether received header h is not sent in place.
func (c *conn) zproxyDrops(e *HeaderEdits, h *http1.Header, scratch []byte) bool {
	if c.req.IsHopByHop(h.Name) || http1.EqualFold(h.Name, hdrExpect) || http1.EqualFold(h.Name, hdrHost) ||
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
