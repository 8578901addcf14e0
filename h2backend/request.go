package h2backend

// RequestBlock builds the header block of a request for Pool.Open. Its
// buffer is reused from one request to the next.
type RequestBlock struct {
	b []byte
}

// Start begins a block with the request's pseudo fields; https picks the
// :scheme.
func (r *RequestBlock) Start(method, path, authority []byte, https bool) {
	b := r.b[:0]
	switch string(method) {
	case "GET":
		b = append(b, 0x80|idxMethodGET)
	case "POST":
		b = append(b, 0x80|idxMethodPOST)
	default:
		b = appendIndexedName(b, idxMethodGET, method)
	}
	if https {
		b = append(b, 0x80|idxSchemeHTTPS)
	} else {
		b = append(b, 0x80|idxSchemeHTTP)
	}
	b = appendIndexedName(b, idxPath, path)
	r.b = appendIndexedName(b, idxAuthority, authority)
}

// Field adds a regular field; the name is written in lower case, as
// HTTP/2 requires (RFC 9113 §8.2.1).
func (r *RequestBlock) Field(name, value []byte) {
	b := hpackInt(append(r.b, 0x10), 0, 7, uint64(len(name)))
	start := len(b)
	b = append(b, name...)
	for i := start; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	r.b = hpackString(b, value)
}

// Bytes is the block built so far.
func (r *RequestBlock) Bytes() []byte { return r.b }
