package http1

// slash is the Path of an absolute-form target with an empty path. Its
// capacity is clipped so that an append by a caller copies instead of
// writing into shared memory.
var slash = []byte("/")[:1:1]

// ParseRequestHead parses the request head at the start of buf into req,
// reusing req.Headers' backing array. It returns nil, ErrNeedMore, or an
// *Error whose Status the caller answers before closing the connection.
//
// Limits are enforced as soon as they are broken, also on incomplete input:
// a 5000-byte request line without its CRLF yet is 414 at once, so a client
// cannot make the proxy buffer past a limit. lim may be nil (DefaultLimits);
// its zero fields take the defaults.
//
// Versions other than HTTP/1.0 and HTTP/1.1 (HTTP/2.0 and the h2 preface
// included) are 400, as in Pound 4, rather than 505.
func ParseRequestHead(buf []byte, req *Request, lim *Limits) error {
	l := resolveLimits(lim)
	req.reset()
	i := 0
	for i+1 < len(buf) && buf[i] == '\r' && buf[i+1] == '\n' {
		// RFC 9112 §2.2: ignore empty lines before the request line (some
		// clients send a CRLF after a POST body).
		i += 2
	}
	if i >= len(buf) || (buf[i] == '\r' && i+1 == len(buf)) {
		return incomplete(len(buf), &l)
	}
	if buf[i] == '\n' {
		return errBareLF
	}
	next, err := req.parseRequestLine(buf, i, &l)
	if err != nil {
		return err
	}
	hs, end, err := scanHeaders(buf, next, req.Headers, &l)
	req.Headers = hs
	if err != nil {
		return err
	}
	req.HeadLen = end
	if lim != nil && lim.CheckMethods && !MethodAllowed(lim.XHTTP, req.MethodID) && req.MethodID != MethodPURGE {
		return ErrMethodNotAllowed
	}
	pathConnect := lim != nil && lim.ConnectPath && req.MethodID == MethodCONNECT && req.Target[0] == '/'
	if pathConnect {
		req.splitPathQuery(req.Target)
	} else if err := req.parseTarget(); err != nil {
		return err
	}
	if err := req.applyHeaders(); err != nil {
		return err
	}
	if pathConnect {
		req.KeepAlive = false
	}
	return nil
}

func (req *Request) reset() {
	hs := req.Headers[:0]
	if hs == nil {
		hs = make([]Header, 0, 32)
	}
	*req = Request{Headers: hs, ContentLength: -1}
}

// parseRequestLine reads "method SP target SP HTTP/1.x CRLF" at buf[i:] and
// returns the offset of the first header line.
func (req *Request) parseRequestLine(buf []byte, i int, l *headLimits) (int, error) {
	limit := i + l.line + 2
	end := min(len(buf), limit)
	j := i
	for j < end && charClass[buf[j]]&cToken != 0 {
		j++
	}
	if j == end {
		return 0, requestLineCut(end, limit, len(buf), l)
	}
	if buf[j] != ' ' || j == i {
		return 0, errMethod
	}
	m, ok := LookupMethod(buf[i:j])
	if !ok || (m == MethodPURGE && !l.purge) {
		return 0, errUnknownMethod
	}
	req.Method, req.MethodID = buf[i:j], m
	t := j + 1
	k := t
	for k < end && charClass[buf[k]]&cTarget != 0 {
		k++
	}
	if l.uri > 0 && k-t > l.uri {
		return 0, errURITooLong
	}
	if k == end {
		return 0, requestLineCut(end, limit, len(buf), l)
	}
	if buf[k] != ' ' || k == t {
		if buf[k] == '#' {
			return 0, errFragment
		}
		return 0, errTarget // CTL, raw byte >= 0x80, double space, tab
	}
	req.Target = buf[t:k]
	return req.parseVersion(buf, k+1, limit, l)
}

// parseVersion checks "HTTP/1.0" or "HTTP/1.1" then CRLF at buf[v:],
// byte by byte so that garbage is refused before the line is complete.
func (req *Request) parseVersion(buf []byte, v, limit int, l *headLimits) (int, error) {
	const proto = "HTTP/1."
	need := v + len(proto) + 3
	n := min(len(buf), need)
	for p := v; p < n; p++ {
		c, off := buf[p], p-v
		switch {
		case off < len(proto):
			if c != proto[off] {
				return 0, errVersion // lower case, HTTP/2.0, HTTP/0.9 ...
			}
		case off == len(proto):
			if c != '0' && c != '1' {
				return 0, errVersion
			}
			req.Minor = int(c - '0')
		case off == len(proto)+1:
			if c == '\n' {
				return 0, errBareLF
			}
			if c != '\r' {
				return 0, errVersion // HTTP/1.11, trailing space
			}
		default:
			if c != '\n' {
				return 0, errBareCR
			}
		}
	}
	if need > limit {
		return 0, errLineTooLong
	}
	if n < need {
		return 0, incomplete(len(buf), l)
	}
	return need, nil
}

func requestLineCut(pos, limit, n int, l *headLimits) error {
	if pos >= limit {
		return errLineTooLong
	}
	return incomplete(n, l)
}

// parseTarget splits Target by its form (RFC 9112 §3.2). The bytes are
// already known to be 0x21-0x7E without '#'.
func (req *Request) parseTarget() error {
	t := req.Target
	switch {
	case req.MethodID == MethodCONNECT:
		// authority-form only: host ":" port
		c := lastColon(t)
		if t[0] == '/' || c < 0 || c == len(t)-1 || !validHost(t) {
			return errTarget
		}
		req.Host = t
		return nil
	case t[0] == '/':
		req.splitPathQuery(t)
		return nil
	case len(t) == 1 && t[0] == '*':
		if req.MethodID != MethodOPTIONS {
			return errTarget
		}
		req.Path = t
		return nil
	}
	var rest []byte
	switch {
	case hasPrefixFold(t, "http://"):
		rest = t[len("http://"):]
	case hasPrefixFold(t, "https://"):
		rest = t[len("https://"):]
	default:
		return errTarget
	}
	a := 0
	for a < len(rest) && rest[a] != '/' && rest[a] != '?' {
		a++
	}
	if a == 0 || !validHost(rest[:a]) {
		return errTarget // empty authority, userinfo, bad bytes
	}
	req.Host, req.AbsoluteForm = rest[:a], true
	req.splitPathQuery(rest[a:])
	if len(req.Path) == 0 {
		req.Path = slash
	}
	return nil
}

func (req *Request) splitPathQuery(pq []byte) {
	for q := 0; q < len(pq); q++ {
		if pq[q] == '?' {
			req.Path, req.Query = pq[:q], pq[q+1:]
			return
		}
	}
	req.Path = pq
}

func lastColon(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ':' {
			return i
		}
		if b[i] == ']' {
			break
		}
	}
	return -1
}

// reqFields collects what applyHeaders learns in its single pass.
type reqFields struct {
	hosts, tes, upgrades int
	host, te             []byte
	ws, expectBad        bool
	conn                 connTokens
}

// applyHeaders gives the header fields their meaning: framing, Host,
// persistence, Expect and Upgrade, refusing every ambiguous combination.
func (req *Request) applyHeaders() error {
	var f reqFields
	for k := range req.Headers {
		if err := req.applyHeader(&req.Headers[k], &f); err != nil {
			return err
		}
	}
	if f.tes > 0 {
		if err := parseTE(f.te); err != nil {
			return err
		}
		switch {
		case req.ContentLength >= 0:
			return errTECL // Pound 4; RFC 9112 §6.1 allows it but MUST close
		case req.Minor == 0:
			return errTEHTTP10 // RFC 9112 §6.1: framing faulty, MUST close
		}
		req.Chunked = true
	}
	if f.hosts > 1 || (f.hosts == 0 && req.Minor == 1) || (f.hosts == 1 && !validHost(f.host)) {
		return errHost
	}
	if req.Host == nil {
		req.Host = f.host
	}
	if f.expectBad {
		return errExpect
	}
	req.KeepAlive = !f.conn.close && (req.Minor == 1 || f.conn.keepAlive)
	req.Upgrade = f.ws && f.upgrades == 1 && f.conn.upgrade && req.Minor == 1 &&
		req.MethodID == MethodGET
	return nil
}

// applyHeader handles one field; the switch on length keeps the common
// case (an end-to-end header) to one comparison.
func (req *Request) applyHeader(h *Header, f *reqFields) error {
	n, v := h.Name, h.Value
	switch len(n) {
	case 4:
		if equalFold(n, "host") {
			f.hosts++
			f.host = v
		}
	case 6:
		if equalFold(n, "expect") {
			if equalFold(v, "100-continue") {
				req.Expect100 = req.Minor == 1
			} else {
				f.expectBad = true
			}
		}
	case 7:
		if equalFold(n, "upgrade") {
			f.upgrades++
			f.ws = equalFold(v, "websocket")
		}
	case 10:
		if equalFold(n, "connection") {
			if !f.conn.add(v) {
				return errConnection
			}
			if req.nConn < maxConnLines {
				req.conn[req.nConn] = v
			}
			req.nConn++
		}
	case 14:
		if equalFold(n, "content-length") {
			if req.ContentLength >= 0 {
				return errCLRepeated // even with the same value (Pound 4)
			}
			cl, ok := parseContentLength(v)
			if !ok {
				return errCL
			}
			req.ContentLength = cl
		}
	case 17:
		if equalFold(n, "transfer-encoding") {
			f.tes++
			if f.tes > 1 {
				return errTERepeated
			}
			f.te = v
		}
	}
	return nil
}

// BodyKind reports how the request body is framed: chunked, Content-Length,
// or none (a request without either has no body, RFC 9112 §6.3).
func (req *Request) BodyKind() BodyKind {
	switch {
	case req.Chunked:
		return BodyChunked
	case req.ContentLength > 0:
		return BodyLength
	}
	return BodyNone
}

// IsHopByHop reports whether the forwarder must drop the field name:
// Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Proxy-*,
// HTTP2-Settings, Upgrade unless this is a WebSocket upgrade (h2c upgrades
// are stripped, Pound forwards only WebSocket), and every option listed in
// the Connection headers except Host and Content-Length. The forwarder
// writes its own Connection (and "Transfer-Encoding: chunked" when
// Chunked) header.
func (req *Request) IsHopByHop(name []byte) bool {
	return hopByHop(name, req.Upgrade, req.conn[:min(req.nConn, maxConnLines)],
		req.nConn > maxConnLines, req.Headers)
}

// HeaderValue returns the first value of the field name (case-insensitive),
// or nil if absent.
func (req *Request) HeaderValue(name []byte) []byte {
	return headerValue(req.Headers, name)
}
