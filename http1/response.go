package http1

// ResponseLimits bound a backend's response head. They are more lenient
// than DefaultLimits on the header count and line length (Set-Cookie lines
// and long CSP headers are common) but still bounded. MaxRequestLine bounds
// the status line; MaxURI is unused. Set it before serving, never during.
var ResponseLimits = Limits{
	MaxRequestLine: 4096,
	MaxHeaderLine:  16 << 10,
	MaxHeaders:     200,
	MaxHead:        64 << 10,
}

// Response errors all carry Status 502: the backend sent something the proxy
// cannot relay safely. Pound answers 503 in that case; the caller chooses.
var (
	errRespStatusLine = &Error{502, "backend: invalid status line"}
	errRespVersion    = &Error{502, "backend: unsupported HTTP version"}
	errRespStatus     = &Error{502, "backend: invalid status code"}
	errRespTooLarge   = &Error{502, "backend: response head too large"}
	errRespHeader     = &Error{502, "backend: malformed header"}
	errRespCL         = &Error{502, "backend: invalid or conflicting Content-Length"}
	errRespTE         = &Error{502, "backend: invalid Transfer-Encoding"}
	errRespConnection = &Error{502, "backend: invalid Connection"}
)

// ParseResponseHead parses a response head at the start of buf into resp,
// reusing resp.Headers. It returns nil, ErrNeedMore, or an *Error (Status
// 502) for garbage. reqMethodHEAD tells whether the request was HEAD, so
// that KeepAlive is right for a bodiless response without Content-Length.
//
// Status line: "HTTP/1.0" or "HTTP/1.1", SP, three digits 100-599, then SP
// and a reason (optional, a missing SP is tolerated). Transfer-Encoding with
// Content-Length: CL is dropped, the body is chunked and KeepAlive is false
// (RFC 9112 §6.1, HAProxy). Repeated identical Content-Length lines are
// accepted, different ones refused.
func ParseResponseHead(buf []byte, resp *Response, reqMethodHEAD bool) error {
	l := resolveLimits(&ResponseLimits)
	resp.reset()
	next, err := resp.parseStatusLine(buf, &l)
	if err != nil {
		return err
	}
	hs, end, err := scanHeaders(buf, next, resp.Headers, &l)
	resp.Headers = hs
	if err != nil {
		return respError(err)
	}
	resp.HeadLen = end
	return resp.applyHeaders(reqMethodHEAD)
}

func (resp *Response) reset() {
	hs := resp.Headers[:0]
	if hs == nil {
		hs = make([]Header, 0, 32)
	}
	*resp = Response{Headers: hs, ContentLength: -1}
}

// respError maps a header-syntax error to its 502 twin, keeping
// ErrNeedMore.
func respError(err error) error {
	switch err {
	case ErrNeedMore:
		return err
	case errHeadTooLarge, errHeaderTooLong, errTooManyHeaders:
		return errRespTooLarge
	}
	return errRespHeader
}

// parseStatusLine reads "HTTP/1.x NNN reason CRLF" and returns the offset
// of the first header line.
func (resp *Response) parseStatusLine(buf []byte, l *headLimits) (int, error) {
	const proto = "HTTP/1."
	limit := l.line + 2
	n := min(len(buf), limit)
	// Fixed part: "HTTP/1.x NNN" (12 bytes), checked byte by byte so that
	// garbage fails before it is complete.
	for p := 0; p < n && p < 12; p++ {
		c := buf[p]
		switch {
		case p < len(proto):
			if c != proto[p] {
				return 0, errRespVersion
			}
		case p == len(proto):
			if c != '0' && c != '1' {
				return 0, errRespVersion
			}
		case p == 8:
			if c != ' ' {
				return 0, errRespStatusLine
			}
		default:
			if charClass[c]&cDigit == 0 {
				return 0, errRespStatus
			}
		}
	}
	if n < 12 {
		return 0, respIncomplete(len(buf), l)
	}
	resp.Minor = int(buf[7] - '0')
	resp.Status = int(buf[9]-'0')*100 + int(buf[10]-'0')*10 + int(buf[11]-'0')
	if resp.Status < 100 || resp.Status > 599 {
		return 0, errRespStatus
	}
	p := 12
	if p < n && buf[p] == ' ' {
		p++
	}
	rs := p
	for p < n && charClass[buf[p]]&cValue != 0 {
		p++
	}
	if (rs == 12 && p > rs) || (p < n && buf[p] != '\r') {
		return 0, errRespStatusLine // "200OK", bare LF, CTL in the reason
	}
	if p+1 >= n {
		if n == limit {
			return 0, errRespTooLarge
		}
		return 0, respIncomplete(len(buf), l)
	}
	if buf[p+1] != '\n' {
		return 0, errRespStatusLine
	}
	if p > l.line {
		return 0, errRespTooLarge
	}
	resp.Reason = buf[rs:p]
	return p + 2, nil
}

func respIncomplete(n int, l *headLimits) error {
	if n > l.head {
		return errRespTooLarge
	}
	return ErrNeedMore
}

// respFields collects what applyHeaders learns in its pass.
type respFields struct {
	tes      int
	te       []byte
	ws       bool
	upgrades int
	conn     connTokens
}

func (resp *Response) applyHeaders(reqMethodHEAD bool) error {
	var f respFields
	for k := range resp.Headers {
		if err := resp.applyHeader(&resp.Headers[k], &f); err != nil {
			return err
		}
	}
	resp.KeepAlive = !f.conn.close && (resp.Minor == 1 || f.conn.keepAlive)
	if f.tes > 0 {
		if f.tes > 1 || parseTE(f.te) != nil {
			return errRespTE
		}
		resp.Chunked = true
		if resp.ContentLength >= 0 {
			// Smuggling signal from the backend: relay chunked, drop CL,
			// and never reuse this backend connection.
			resp.ContentLength = -1
			resp.KeepAlive = false
		}
		if resp.Minor == 0 {
			resp.KeepAlive = false
		}
	}
	if resp.Status == 101 {
		resp.Upgrade = f.ws && f.upgrades == 1 && f.conn.upgrade
		resp.KeepAlive = false // the connection is no longer HTTP
	}
	if resp.BodyKind(reqMethodHEAD) == BodyUntilClose {
		resp.KeepAlive = false
	}
	return nil
}

func (resp *Response) applyHeader(h *Header, f *respFields) error {
	n, v := h.Name, h.Value
	switch len(n) {
	case 7:
		if equalFold(n, "upgrade") {
			f.upgrades++
			f.ws = equalFold(v, "websocket")
		}
	case 10:
		if equalFold(n, "connection") {
			if !f.conn.add(v) {
				return errRespConnection
			}
			if resp.nConn < maxConnLines {
				resp.conn[resp.nConn] = v
			}
			resp.nConn++
		}
	case 14:
		if equalFold(n, "content-length") {
			cl, ok := parseContentLength(v)
			if !ok || (resp.ContentLength >= 0 && cl != resp.ContentLength) {
				return errRespCL
			}
			resp.ContentLength = cl
		}
	case 17:
		if equalFold(n, "transfer-encoding") {
			f.tes++
			f.te = v
		}
	}
	return nil
}

// BodyKind reports how the response body is framed (RFC 9112 §6.3): none
// for a HEAD request, 1xx, 204 and 304 (whatever the headers say) and for
// Content-Length 0; chunked; Content-Length; otherwise until close.
func (resp *Response) BodyKind(reqIsHEAD bool) BodyKind {
	switch {
	case reqIsHEAD, resp.Status < 200, resp.Status == 204, resp.Status == 304:
		return BodyNone
	case resp.Chunked:
		return BodyChunked
	case resp.ContentLength > 0:
		return BodyLength
	case resp.ContentLength == 0:
		return BodyNone
	}
	return BodyUntilClose
}

// IsHopByHop reports whether the forwarder must drop the response field
// name; the same set as Request.IsHopByHop, with Upgrade kept only for a
// WebSocket 101.
func (resp *Response) IsHopByHop(name []byte) bool {
	return hopByHop(name, resp.Upgrade, resp.conn[:min(resp.nConn, maxConnLines)],
		resp.nConn > maxConnLines, resp.Headers)
}

// HeaderValue returns the first value of the field name (case-insensitive),
// or nil if absent.
func (resp *Response) HeaderValue(name []byte) []byte {
	return headerValue(resp.Headers, name)
}
