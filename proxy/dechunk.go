package proxy

// dechunker decodes a chunked body (RFC 9112 §7.1) given in pieces of
// any size, for a reader that needs the data (the WAF). The framing was
// already checked by http1.ChunkScanner as it went by, so it is lenient:
// it only has to find the data.
type dechunker struct {
	state int
	left  int64 // data bytes left in the current chunk
	last  bool  // the size line read was 0: trailers follow
	// keepTrailer: the trailer lines ("Name: value\r\n") are appended to
	// trailer, for the HTTP/2 backend paths (h2trailer.go).
	keepTrailer bool
	trailer     []byte
}

const (
	dcSize     = iota // in the chunk-size digits
	dcExt             // after the size: extensions, up to LF
	dcData            // in chunk data
	dcDataEnd         // the CRLF after the data
	dcTrailer         // at the start of a trailer line (or the final CRLF)
	dcTrailerL        // inside a trailer line
	dcDone
)

func (d *dechunker) reset() { *d = dechunker{} }

// decode appends the data bytes of p to dst.
func (d *dechunker) decode(dst, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch d.state {
		case dcSize:
			if v, ok := hexVal(c); ok {
				d.left = d.left<<4 | int64(v)
				continue
			}
			d.state = dcExt
			i-- // let dcExt see the byte
		case dcExt:
			if c != '\n' {
				continue
			}
			d.last = d.left == 0
			d.state = dcData
			if d.last {
				d.state = dcTrailer
			}
		case dcData:
			n := int64(len(p) - i)
			if n > d.left {
				n = d.left
			}
			dst = append(dst, p[i:i+int(n)]...)
			d.left -= n
			i += int(n) - 1
			if d.left == 0 {
				d.state = dcDataEnd
			}
		case dcDataEnd:
			if c == '\n' {
				d.state = dcSize
			}
		case dcTrailer:
			switch c {
			case '\r':
			case '\n':
				d.state = dcDone
			default:
				d.state = dcTrailerL
				d.keep(c)
			}
		case dcTrailerL:
			d.keep(c)
			if c == '\n' {
				d.state = dcTrailer
			}
		}
	}
	return dst
}

// keep appends a byte of a trailer line when the trailers are kept; the
// ChunkScanner bounds them (http1.MaxTrailerBytes).
func (d *dechunker) keep(c byte) {
	if d.keepTrailer {
		d.trailer = append(d.trailer, c)
	}
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
