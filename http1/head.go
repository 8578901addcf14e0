package http1

import "encoding/binary"

// Errors are package-level values so that refusing a request allocates
// nothing (a flood of bad requests must stay cheap). Callers must not modify
// them.
var (
	errBareLF         = &Error{400, "bare LF"}
	errBareCR         = &Error{400, "bare CR"}
	errObsFold        = &Error{400, "obs-fold or whitespace-led header line"}
	errHeaderName     = &Error{400, "invalid header name"}
	errHeaderValue    = &Error{400, "invalid byte in header value"}
	errTooManyHeaders = &Error{400, "too many header fields"}
	errHeadTooLarge   = &Error{400, "request head too large"}
	errHeaderTooLong  = &Error{413, "header line too long"}
	errLineTooLong    = &Error{414, "request line too long"}
	errURITooLong     = &Error{414, "request-target too long"}
	errMethod         = &Error{400, "invalid method"}
	errUnknownMethod  = &Error{400, "unknown method"}
	errTarget         = &Error{400, "invalid request-target"}
	// ErrMethodNotAllowed: the method is outside Limits.XHTTP.
	ErrMethodNotAllowed = &Error{405, "method not allowed"}
	errFragment         = &Error{400, "fragment in request-target"}
	errVersion          = &Error{400, "unsupported HTTP version"}
	errHost             = &Error{400, "missing, repeated or invalid Host"}
	errCL               = &Error{400, "invalid Content-Length"}
	errCLRepeated       = &Error{400, "repeated Content-Length"}
	errTECL             = &Error{400, "Transfer-Encoding with Content-Length"}
	errTERepeated       = &Error{400, "repeated Transfer-Encoding"}
	errTEHTTP10         = &Error{400, "Transfer-Encoding in HTTP/1.0"}
	errTEInvalid        = &Error{400, "invalid Transfer-Encoding"}
	errTENotLast        = &Error{400, "chunked is not the last transfer coding"}
	errTEUnknown        = &Error{501, "unsupported transfer coding"}
	errConnection       = &Error{400, "invalid Connection"}
	errExpect           = &Error{417, "unsupported expectation"}
)

// headLimits are the resolved (non-zero) limits of one parse.
type headLimits struct {
	line, uri, headerLine, headers, head int
	purge                                bool
}

func resolveLimits(l *Limits) headLimits {
	if l == nil {
		l = &DefaultLimits
	}
	r := headLimits{l.MaxRequestLine, l.MaxURI, l.MaxHeaderLine, l.MaxHeaders, l.MaxHead, l.Purge}
	if r.line <= 0 {
		r.line = DefaultLimits.MaxRequestLine
	}
	if r.headerLine <= 0 {
		r.headerLine = DefaultLimits.MaxHeaderLine
	}
	if r.headers <= 0 {
		r.headers = DefaultLimits.MaxHeaders
	}
	if r.head <= 0 {
		r.head = DefaultLimits.MaxHead
	}
	return r
}

// incomplete is the answer when the buffer ends inside the head: either a
// limit is already broken or the caller should read more.
func incomplete(n int, lim *headLimits) error {
	if n > lim.head {
		return errHeadTooLarge
	}
	return ErrNeedMore
}

// scanHeaders reads header lines from buf[i:] up to and including the empty
// line, appending them to hs. It returns the offset just past the head.
// Syntax only: the meaning of fields is the caller's.
func scanHeaders(buf []byte, i int, hs []Header, lim *headLimits) ([]Header, int, error) {
	for {
		if i >= len(buf) {
			return hs, 0, incomplete(len(buf), lim)
		}
		switch buf[i] {
		case '\r':
			if i+1 >= len(buf) {
				return hs, 0, incomplete(len(buf), lim)
			}
			if buf[i+1] != '\n' {
				return hs, 0, errBareCR
			}
			if i+2 > lim.head {
				return hs, 0, errHeadTooLarge
			}
			return hs, i + 2, nil
		case '\n':
			return hs, 0, errBareLF
		case ' ', '\t':
			// obs-fold, or whitespace before the first field: both are
			// smuggling vectors (RFC 9112 §2.2, §5.2), refuse rather than unfold.
			return hs, 0, errObsFold
		}
		if len(hs) >= lim.headers {
			return hs, 0, errTooManyHeaders
		}
		h, next, err := scanHeaderLine(buf, i, lim)
		if err != nil {
			return hs, 0, err
		}
		hs = append(hs, h)
		i = next
	}
}

// scanHeaderLine parses one "name: value CRLF" line starting at i.
func scanHeaderLine(buf []byte, i int, lim *headLimits) (Header, int, error) {
	limit := i + lim.headerLine + 2 // the line may use headerLine bytes plus CRLF
	end := min(len(buf), limit)
	j := i
	for j < end && charClass[buf[j]]&cToken != 0 {
		j++
	}
	if j == end {
		return Header{}, 0, lineCut(end, limit, len(buf), lim)
	}
	if buf[j] != ':' || j == i {
		// covers "Name :", "Na@me:", ": v", a line with no colon, and NUL
		// or CTL in the name.
		return Header{}, 0, errHeaderName
	}
	name := buf[i:j]
	j++
	for j < end && (buf[j] == ' ' || buf[j] == '\t') {
		j++
	}
	vs := j
	j = scanValue(buf, j, end)
	if j == end {
		return Header{}, 0, lineCut(end, limit, len(buf), lim)
	}
	if buf[j] != '\r' {
		if buf[j] == '\n' {
			return Header{}, 0, errBareLF
		}
		return Header{}, 0, errHeaderValue // NUL, CTL, DEL
	}
	if j-i > lim.headerLine {
		return Header{}, 0, errHeaderTooLong
	}
	if j+1 >= end {
		return Header{}, 0, lineCut(j+1, limit, len(buf), lim)
	}
	if buf[j+1] != '\n' {
		return Header{}, 0, errBareCR
	}
	if j+2 > lim.head {
		return Header{}, 0, errHeadTooLarge
	}
	ve := j
	for ve > vs && (buf[ve-1] == ' ' || buf[ve-1] == '\t') {
		ve--
	}
	return Header{Name: name, Value: buf[vs:ve]}, j + 2, nil
}

// lineCut decides between "header line too long" and "need more" when a
// scan stopped at pos without finding the end of the line.
func lineCut(pos, limit, n int, lim *headLimits) error {
	if pos >= limit {
		return errHeaderTooLong
	}
	return incomplete(n, lim)
}

// connTokens reads a Connection value's options. Empty list elements are
// allowed (RFC 9110 §5.6.1); anything that is not a token is refused.
type connTokens struct {
	close, keepAlive, upgrade bool
}

func (c *connTokens) add(v []byte) bool {
	for rest := v; rest != nil; {
		var e []byte
		e, rest = nextListElem(rest)
		switch {
		case len(e) == 0:
		case !isToken(e):
			return false
		case equalFold(e, "close"):
			c.close = true
		case equalFold(e, "keep-alive"):
			c.keepAlive = true
		case equalFold(e, "upgrade"):
			c.upgrade = true
		}
	}
	return true
}

// parseTE accepts exactly "chunked" (case-insensitive). chunked anywhere but
// last is 400 (RFC 9112 §6.3 says the framing is then unknowable); other
// codings are 501 like nginx and Pound, which also covers "gzip, chunked":
// the body is relayed raw, so a coding we would have to re-announce is not
// worth the risk.
func parseTE(v []byte) error {
	if len(trimOWS(v)) == 0 {
		return errTEInvalid
	}
	unknown := false
	for rest := v; rest != nil; {
		var e []byte
		e, rest = nextListElem(rest)
		if !isToken(e) {
			return errTEInvalid // empty element, parameters, CTL
		}
		if equalFold(e, "chunked") {
			if rest != nil {
				return errTENotLast
			}
			continue
		}
		unknown = true
	}
	if unknown {
		return errTEUnknown
	}
	return nil
}

// isHopName reports the names that are hop-by-hop whatever the Connection
// header says (RFC 9110 §7.6.1, plus HTTP2-Settings for h2c smuggling and
// Proxy-* as Pound does). Upgrade is handled by the caller.
func isHopName(name []byte) bool {
	switch len(name) {
	case 2:
		return equalFold(name, "te")
	case 7:
		return equalFold(name, "trailer")
	case 10:
		return equalFold(name, "connection") || equalFold(name, "keep-alive")
	case 14:
		return equalFold(name, "http2-settings")
	case 17:
		return equalFold(name, "transfer-encoding")
	}
	return hasPrefixFold(name, "proxy-")
}

// hopByHop is the shared body of Request.IsHopByHop and Response.IsHopByHop.
// Host and Content-Length stay end-to-end even when Connection lists them:
// dropping them on a client's say-so is the classic hop-by-hop abuse that
// desyncs the backend.
func hopByHop(name []byte, ws bool, conn [][]byte, overflow bool, hs []Header) bool {
	if equalFold(name, "upgrade") {
		return !ws
	}
	if isHopName(name) {
		return true
	}
	if equalFold(name, "host") || equalFold(name, "content-length") {
		return false
	}
	for _, v := range conn {
		if listHas(v, name) {
			return true
		}
	}
	if overflow {
		for k := range hs {
			if equalFold(hs[k].Name, "connection") && listHas(hs[k].Value, name) {
				return true
			}
		}
	}
	return false
}

func listHas(list, name []byte) bool {
	for rest := list; rest != nil; {
		var e []byte
		e, rest = nextListElem(rest)
		if equalFoldBytes(e, name) {
			return true
		}
	}
	return false
}

// headerValue returns the first value of name in hs, nil if absent.
func headerValue(hs []Header, name []byte) []byte {
	for k := range hs {
		if equalFoldBytes(hs[k].Name, name) {
			return hs[k].Value
		}
	}
	return nil
}

// Word-at-a-time constants for scanValue.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// scanValue returns the index of the first byte in buf[j:end] that is not a
// field-value byte (or end). It checks 8 bytes per step while none is a CTL
// or DEL, which covers almost every value; the byte loop finishes the tail
// and HTAB.
func scanValue(buf []byte, j, end int) int {
	for j+8 <= end {
		w := binary.LittleEndian.Uint64(buf[j:])
		// (w - 0x20*ones) &^ w & highs is non-zero iff some byte < 0x20;
		// the same on w^0x7f*ones finds a DEL (0x7F) byte as a zero byte.
		d := w ^ (0x7f * ones)
		if ((w-0x20*ones)&^w|(d-ones)&^d)&highs != 0 {
			break
		}
		j += 8
	}
	for j < end && charClass[buf[j]]&cValue != 0 {
		j++
	}
	return j
}
