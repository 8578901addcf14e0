package http1

// Bounds of a chunked body's metadata. Payload size is the caller's business
// (MaxRequest); these stop a peer from making the scanner work without
// limit on bytes that carry no payload.
const (
	MaxChunkLine    = 4096    // chunk-size line including extensions, without CRLF
	MaxTrailerBytes = 8 << 10 // all trailer lines and the final CRLF
	maxChunkDigits  = 16      // chunk-size hex digits (HAProxy and nginx allow 16)
)

// Chunk errors carry Status 400: the answer for a request body. For a
// response body the caller aborts the client connection instead.
var (
	errChunkSize      = &Error{400, "invalid chunk size"}
	errChunkExt       = &Error{400, "invalid chunk extension"}
	errChunkLineLong  = &Error{400, "chunk-size line too long"}
	errChunkCRLF      = &Error{400, "chunk line not ended by CRLF"}
	errChunkRunaway   = &Error{400, "chunk data longer than its size"}
	errTrailer        = &Error{400, "invalid trailer field"}
	errTrailerLarge   = &Error{400, "trailer section too large"}
	errTrailerBanned  = &Error{400, "forbidden trailer field"}
	errChunkAfterDone = &Error{400, "chunked body already complete"}
)

const (
	stSize    uint8 = iota // at a chunk-size digit
	stSizeBWS              // BWS after the size; only ';' may follow
	stExt                  // inside chunk extensions
	stSizeLF               // CR seen, LF expected
	stData                 // payload bytes
	stDataCR               // payload done, CR expected
	stDataLF               // LF expected after the payload
	stTrStart              // start of a trailer line or of the final CRLF
	stTrName               // trailer field name
	stTrValue              // trailer field value
	stTrLF                 // LF expected after a trailer line
	stFinalLF              // LF of the final CRLF
	stDone                 // body complete
)

// trailerNameCap bounds the part of a trailer name kept for the forbidden
// check; every forbidden name is shorter.
const trailerNameCap = 20

// ChunkScanner validates a chunked body (RFC 9112 §7.1) incrementally so
// the proxy can relay the raw bytes as they arrive, without re-framing.
// The zero value is ready to use; Reset prepares it for the next body.
//
// Strictness: 1-16 hex digits (no "0x", sign or space; BWS only before
// ';'), extensions of visible bytes within MaxChunkLine, CRLF everywhere
// (bare LF or CR is an error), exactly CRLF after the payload (a runaway
// chunk is an error), trailer fields checked like header fields within
// MaxTrailerBytes. Trailer fields that the relayed body cannot drop but
// that a backend might merge into the head (framing, routing,
// authentication: Content-Length, Host, Authorization...) are refused.
type ChunkScanner struct {
	state   uint8
	digits  uint8
	nameLen uint8
	size    uint64 // chunk-size being read
	rem     uint64 // payload bytes left in the current chunk
	line    int    // bytes of the current chunk-size line
	trailer int    // trailer bytes so far
	err     error
	name    [trailerNameCap]byte // lower-cased trailer name prefix
}

// Reset makes the scanner ready for a new body.
func (c *ChunkScanner) Reset() { *c = ChunkScanner{} }

// Remaining returns the payload bytes left in the current chunk, or 0 when
// the scanner is not inside chunk data. The caller may relay that many
// bytes without scanning them (splice) and then call Skip.
func (c *ChunkScanner) Remaining() int64 {
	if c.state != stData {
		return 0
	}
	return int64(c.rem)
}

// AtChunkStart reports whether the scanner waits for a chunk-size line:
// between two chunks (or before the first), where a relay may insert a
// chunk of its own without the scanner seeing it.
func (c *ChunkScanner) AtChunkStart() bool {
	return c.err == nil && c.state == stSize && c.digits == 0 && c.line == 0
}

// InTrailers reports whether the scanner is inside the trailer section
// (after the last chunk, before the end of the body): the bytes Scan takes
// from here on are trailer lines and the final CRLF.
func (c *ChunkScanner) InTrailers() bool { return c.state >= stTrStart && c.state <= stFinalLF }

// Skip accounts for n payload bytes relayed without Scan. It reports false,
// changing nothing, when n is negative or more than Remaining.
func (c *ChunkScanner) Skip(n int64) bool {
	if c.state != stData || n < 0 || uint64(n) > c.rem {
		return false
	}
	c.rem -= uint64(n)
	if c.rem == 0 {
		c.state = stDataCR
	}
	return true
}

// Scan consumes a prefix of p. n is the number of bytes that belong to the
// chunked body: all of p unless the body ends inside p (the rest is the
// next message). done means the last chunk and the trailers were seen. On
// error n counts the bytes before the offending one; the error is sticky.
func (c *ChunkScanner) Scan(p []byte) (n int, done bool, err error) {
	if c.err != nil {
		return 0, false, c.err
	}
	if c.state == stDone {
		return 0, true, nil
	}
	i := 0
	for i < len(p) {
		if c.state == stData {
			// Fast path: payload is counted, not read.
			avail := uint64(len(p) - i)
			if avail < c.rem {
				c.rem -= avail
				return len(p), false, nil
			}
			i += int(c.rem)
			c.rem = 0
			c.state = stDataCR
			continue
		}
		if err := c.step(p[i]); err != nil {
			c.err = err
			return i, false, err
		}
		i++
		if c.state == stDone {
			return i, true, nil
		}
	}
	return i, false, nil
}

// step advances the state machine by one metadata byte.
func (c *ChunkScanner) step(b byte) error {
	switch c.state {
	case stSize, stSizeBWS, stExt, stSizeLF:
		return c.stepSizeLine(b)
	case stDataCR:
		if b != '\r' {
			return errChunkRunaway
		}
		c.state = stDataLF
	case stDataLF:
		if b != '\n' {
			return errChunkCRLF
		}
		c.state, c.size, c.digits, c.line = stSize, 0, 0, 0
	default:
		return c.stepTrailer(b)
	}
	return nil
}

func (c *ChunkScanner) stepSizeLine(b byte) error {
	c.line++
	if c.line > MaxChunkLine && b != '\r' && c.state != stSizeLF {
		return errChunkLineLong // checked per byte: a peer cannot stream an endless line
	}
	switch c.state {
	case stSize:
		if charClass[b]&cHex != 0 {
			if c.digits == maxChunkDigits || c.size > (1<<63-1)>>4 {
				return errChunkSize // would overflow int64
			}
			c.digits++
			c.size = c.size<<4 | uint64(hexVal[b])
			return nil
		}
		if c.digits == 0 {
			return errChunkSize // empty, "+5", " 5"
		}
		return c.afterSize(b)
	case stSizeBWS:
		if b == ' ' || b == '\t' {
			return nil
		}
		if b != ';' {
			return errChunkSize // "5 \r\n": spaces are allowed only before ';'
		}
		c.state = stExt
	case stExt:
		if b == '\r' {
			c.state = stSizeLF
		} else if charClass[b]&cExt == 0 {
			return errChunkExt // bare LF, NUL, CTL
		}
	case stSizeLF:
		if b != '\n' {
			return errChunkCRLF
		}
		if c.size == 0 {
			c.state = stTrStart
			return nil
		}
		c.rem, c.state = c.size, stData
	}
	return nil
}

// afterSize handles the byte that ends the hex digits.
func (c *ChunkScanner) afterSize(b byte) error {
	switch b {
	case '\r':
		c.state = stSizeLF
	case ';':
		c.state = stExt
	case ' ', '\t':
		c.state = stSizeBWS
	default:
		return errChunkSize // "0x5", "5\n", "1Z"
	}
	return nil
}

func (c *ChunkScanner) stepTrailer(b byte) error {
	c.trailer++
	if c.trailer > MaxTrailerBytes {
		return errTrailerLarge
	}
	switch c.state {
	case stTrStart:
		switch {
		case b == '\r':
			c.state = stFinalLF
		case charClass[b]&cToken != 0:
			c.state, c.nameLen = stTrName, 0
			c.addNameByte(b)
		default:
			return errTrailer // obs-fold, empty name, bare LF
		}
	case stTrName:
		switch {
		case charClass[b]&cToken != 0:
			c.addNameByte(b)
		case b == ':':
			if c.nameLen <= trailerNameCap && BannedTrailer(string(c.name[:c.nameLen])) {
				return errTrailerBanned
			}
			c.state = stTrValue
		default:
			return errTrailer // "Name :", bad byte
		}
	case stTrValue:
		if b == '\r' {
			c.state = stTrLF
		} else if charClass[b]&cValue == 0 {
			return errTrailer
		}
	case stTrLF, stFinalLF:
		if b != '\n' {
			return errChunkCRLF
		}
		if c.state == stFinalLF {
			c.state = stDone
		} else {
			c.state = stTrStart
		}
	default: // stDone is handled by Scan
		return errChunkAfterDone
	}
	return nil
}

// addNameByte keeps the lower-cased name prefix; nameLen counts one past
// the cap so that a long name is known not to be banned.
func (c *ChunkScanner) addNameByte(b byte) {
	if c.nameLen < trailerNameCap {
		c.name[c.nameLen] = lowerTab[b]
		c.nameLen++
	} else {
		c.nameLen = trailerNameCap + 1
	}
}

// BannedTrailer lists the fields a trailer must not carry (RFC 9110
// §6.5.1), by lower-case name: a backend that merges trailers into the
// head would see them as framing, routing or credentials the proxy never
// checked. The HTTP/2 front end holds request trailers to the same list.
func BannedTrailer(name string) bool {
	switch name {
	case "content-length", "transfer-encoding", "host", "connection",
		"keep-alive", "te", "trailer", "upgrade", "expect", "http2-settings",
		"authorization", "proxy-authorization", "cookie", "set-cookie",
		"content-type", "content-encoding", "content-range", "range":
		return true
	}
	return false
}
