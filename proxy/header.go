package proxy

import (
	"strconv"

	"lbd/config"
	"lbd/http1"
	"lbd/service"
)

var (
	hdrXFF       = "X-Forwarded-For"
	hdrHost      = "Host"
	hdrExpect    = "Expect"
	crlf         = "\r\n"
	chunkedLine  = "Transfer-Encoding: chunked\r\n"
	upgradeLine  = "Connection: Upgrade\r\n"
	closeLine    = "Connection: close\r\n"
	keepLine     = "Connection: keep-alive\r\n"
	continueBody = []byte(continue100)
)

// HeaderEdits are the precompiled header rules of a listener or service.
type HeaderEdits struct {
	RequestRemove  []*config.Pattern // matched against the whole line
	RequestAdd     []string          // complete lines "Name: value\r\n"
	RequestSet     []string          // complete lines; replace same-named headers
	setNames       []string
	ResponseRemove []*config.Pattern
	ResponseAdd    []string
}

// NewHeaderEdits prepares rules for the hot path: lines are terminated
// once here, names of SetHeader lines extracted once.
func NewHeaderEdits(rules ...config.HeaderRules) *HeaderEdits {
	e := &HeaderEdits{}
	for _, r := range rules {
		e.RequestRemove = append(e.RequestRemove, r.RequestRemove...)
		e.ResponseRemove = append(e.ResponseRemove, r.ResponseRemove...)
		for _, l := range r.RequestAdd {
			e.RequestAdd = append(e.RequestAdd, l+crlf)
		}
		for _, l := range r.RequestSet {
			e.RequestSet = append(e.RequestSet, l+crlf)
			e.setNames = append(e.setNames, headerName(l))
		}
		for _, l := range r.ResponseAdd {
			e.ResponseAdd = append(e.ResponseAdd, l+crlf)
		}
	}
	return e
}

func headerName(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == ':' {
			return line[:i]
		}
	}
	return line
}

// appendRequestHead writes the request head as it goes to the backend:
// the request line as received (absolute-form reduced to origin-form),
// every end-to-end header except those the rules remove, then the
// forwarding headers and the rules' additions.
func (c *conn) appendRequestHead(st *Listener, svc *service.Service, dst []byte) []byte {
	req := &c.req
	head := c.head()
	dst = append(dst, req.Method...)
	dst = append(dst, ' ')
	absolute := req.AbsoluteForm
	if absolute {
		dst = append(dst, req.Path...)
		if req.Query != nil {
			dst = append(dst, '?')
			dst = append(dst, req.Query...)
		}
	} else {
		dst = append(dst, req.Target...)
	}
	dst = append(dst, " HTTP/1."...)
	dst = append(dst, byte('0'+req.Minor))
	dst = append(dst, crlf...)
	edits := st.edits(svc)
	for i := range req.Headers {
		h := &req.Headers[i]
		if req.IsHopByHop(h.Name) || (st.Forwarded && eqFold(h.Name, hdrXFF)) ||
			(absolute && eqFold(h.Name, hdrHost)) || eqFold(h.Name, hdrExpect) ||
			edits.removesRequest(h, head) {
			continue
		}
		dst = appendHeader(dst, h)
	}
	if absolute {
		dst = append(dst, "Host: "...)
		dst = append(dst, req.Host...)
		dst = append(dst, crlf...)
	}
	if req.Chunked {
		dst = append(dst, chunkedLine...)
	}
	if req.Upgrade {
		dst = append(dst, upgradeLine...)
	}
	if st.Forwarded {
		dst = c.appendForwarded(st, dst)
	}
	for _, l := range edits.RequestSet {
		dst = append(dst, l...)
	}
	for _, l := range edits.RequestAdd {
		dst = append(dst, l...)
	}
	return append(dst, crlf...)
}

// appendForwarded adds X-Forwarded-For (merged into the client's own, as
// Pound 4 does: "192.0.2.2, 127.0.0.1"), X-Forwarded-Proto and -Port.
func (c *conn) appendForwarded(st *Listener, dst []byte) []byte {
	dst = append(dst, hdrXFF...)
	dst = append(dst, ": "...)
	for i := range c.req.Headers {
		h := &c.req.Headers[i]
		if eqFold(h.Name, hdrXFF) && len(h.Value) > 0 {
			dst = append(dst, h.Value...)
			dst = append(dst, ", "...)
		}
	}
	dst = c.client.AppendTo(dst)
	dst = append(dst, "\r\nX-Forwarded-Proto: "...)
	dst = append(dst, st.Scheme...)
	dst = append(dst, "\r\nX-Forwarded-Port: "...)
	dst = append(dst, st.Port...)
	return append(dst, crlf...)
}

// Connection handling lines for appendResponseHead.
const (
	connKeep    = iota // persistent: say so only to HTTP/1.0 clients
	connClose          // Connection: close
	connUpgrade        // WebSocket 101
)

// appendResponseHead writes the response head for the client.
func (c *conn) appendResponseHead(st *Listener, dst []byte, mode int) []byte {
	resp := &c.resp
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(resp.Status), 10)
	dst = append(dst, ' ')
	dst = append(dst, resp.Reason...)
	dst = append(dst, crlf...)
	edits := st.edits(c.ex.svc)
	for i := range resp.Headers {
		h := &resp.Headers[i]
		if resp.IsHopByHop(h.Name) || (resp.Chunked && eqFold(h.Name, "Content-Length")) ||
			edits.removesResponse(h) {
			continue
		}
		dst = appendHeader(dst, h)
	}
	if resp.Chunked {
		dst = append(dst, chunkedLine...)
	}
	switch {
	case mode == connUpgrade:
		dst = append(dst, "Connection: Upgrade\r\nUpgrade: websocket\r\n"...)
	case mode == connClose:
		dst = append(dst, closeLine...)
	case c.req.Minor == 0:
		dst = append(dst, keepLine...)
	}
	for _, l := range edits.ResponseAdd {
		dst = append(dst, l...)
	}
	dst = append(dst, c.ex.respExtra...)
	return append(dst, crlf...)
}

func appendHeader(dst []byte, h *http1.Header) []byte {
	dst = append(dst, h.Name...)
	dst = append(dst, ": "...)
	dst = append(dst, h.Value...)
	return append(dst, crlf...)
}

func (e *HeaderEdits) removesRequest(h *http1.Header, head []byte) bool {
	for _, n := range e.setNames {
		if eqFold(h.Name, n) {
			return true
		}
	}
	if len(e.RequestRemove) == 0 {
		return false
	}
	line := service.HeaderLine(head, h)
	for _, p := range e.RequestRemove {
		if p.Re != nil && p.Re.Match(line) {
			return true
		}
	}
	return false
}

func (e *HeaderEdits) removesResponse(h *http1.Header) bool {
	for _, p := range e.ResponseRemove {
		if p.Re != nil && (p.Re.Match(h.Name) || p.Re.Match(h.Value)) {
			return true
		}
	}
	return false
}

// eqFold compares an ASCII header name case-insensitively.
func eqFold(s []byte, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if a != b && (a|0x20 != b|0x20 || a|0x20 < 'a' || a|0x20 > 'z') {
			return false
		}
	}
	return true
}
