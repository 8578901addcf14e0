package proxy

import (
	"strconv"

	"lbd/http1"
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
	if hasResponseRules(st, c.ex.svc, e) {
		var ok bool
		if dst, ok = c.appendRuledResponse(st, e, mode, dst); !ok {
			return nil
		}
	} else {
		dst = appendStatusLine(dst, resp.Status, resp.Reason)
		var placed inPlace
		dst = c.appendResponseHeaders(st, e, mode, &placed, dst)
		dst = c.appendFramingTail(mode, &placed, dst)
	}
	dst = append(dst, c.ex.respExtra...)
	return append(dst, crlf...)
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
		if st.FramingInPlace {
			var ok bool
			if dst, ok = c.appendFramingInPlace(h, mode, placed, dst); ok {
				continue
			}
		}
		if resp.IsHopByHop(h.Name) || (resp.Chunked && http1.EqualFold(h.Name, hdrContentLen)) {
			continue
		}
		dst = c.appendPoundResponseHeader(st, e, h, dst)
	}
	return dst
}

// appendFramingTail adds the framing lines not written in place.
func (c *conn) appendFramingTail(mode int, placed *inPlace, dst []byte) []byte {
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
	return dst
}

// inPlace records which framing lines were written where the backend
// had them, so they are not added again at the end.
type inPlace struct{ te, conn, upgrade bool }

// appendFramingInPlace handles the framing headers relayed in place
// (Listener.FramingInPlace, zproxy's way): Transfer-Encoding as received
// when the body is relayed chunked, Connection replaced by lbd's own
// keep-alive or close decision, and a 101's Upgrade. It reports whether
// h was such a header (written, or dropped as a duplicate).
func (c *conn) appendFramingInPlace(h *http1.Header, mode int, p *inPlace, dst []byte) ([]byte, bool) {
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
	case p.conn:
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

// appendPoundResponseHeader sends h; Location and Content-Location go
// through RewriteLocation in place when the edits say so (Pound's).
func (c *conn) appendPoundResponseHeader(st *Listener, e *HeaderEdits, h *http1.Header, dst []byte) []byte {
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
