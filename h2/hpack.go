package h2

// lbd encodes response headers with HPACK's static table only (RFC 7541):
// a field is an indexed name or a literal name, and its value a literal,
// never added to the dynamic table. That keeps the encoder stateless and
// allocation-free, so the proxy's goroutine encodes its own response; the
// bytes a dynamic table would save are a few dozen per response.

// staticNames maps the names of RFC 7541 Appendix A to their first index.
var staticNames = func() map[string]uint8 {
	names := []string{
		":authority", ":method", ":method", ":path", ":path", ":scheme", ":scheme",
		":status", ":status", ":status", ":status", ":status", ":status", ":status",
		"accept-charset", "accept-encoding", "accept-language", "accept-ranges", "accept",
		"access-control-allow-origin", "age", "allow", "authorization", "cache-control",
		"content-disposition", "content-encoding", "content-language", "content-length",
		"content-location", "content-range", "content-type", "cookie", "date", "etag",
		"expect", "expires", "from", "host", "if-match", "if-modified-since",
		"if-none-match", "if-range", "if-unmodified-since", "last-modified", "link",
		"location", "max-forwards", "proxy-authenticate", "proxy-authorization", "range",
		"referer", "refresh", "retry-after", "server", "set-cookie",
		"strict-transport-security", "transfer-encoding", "user-agent", "vary", "via",
		"www-authenticate",
	}
	m := make(map[string]uint8, len(names))
	for i, n := range names {
		if _, dup := m[n]; !dup {
			m[n] = uint8(i + 1)
		}
	}
	return m
}()

// statusIndex is the static entry holding a whole ":status" field.
func statusIndex(code int) uint8 {
	switch code {
	case 200:
		return 8
	case 204:
		return 9
	case 206:
		return 10
	case 304:
		return 11
	case 400:
		return 12
	case 404:
		return 13
	case 500:
		return 14
	}
	return 0
}

// appendInt writes an HPACK integer with an n-bit prefix (§5.1); first
// carries the pattern bits above the prefix.
func appendInt(b []byte, first byte, n uint, v uint64) []byte {
	limit := uint64(1)<<n - 1
	if v < limit {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(limit))
	v -= limit
	for v >= 128 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendString writes a raw (not Huffman-coded) string literal (§5.2).
func appendString(b []byte, s []byte) []byte {
	b = appendInt(b, 0, 7, uint64(len(s)))
	return append(b, s...)
}

// appendStatus writes the ":status" field.
func appendStatus(b []byte, code int) []byte {
	if i := statusIndex(code); i != 0 {
		return appendInt(b, 0x80, 7, uint64(i)) // indexed field
	}
	var v [3]byte
	v[0], v[1], v[2] = byte('0'+code/100), byte('0'+code/10%10), byte('0'+code%10)
	b = appendInt(b, 0, 4, 8) // literal without indexing, name ":status"
	return appendString(b, v[:])
}

// appendField writes a literal field without indexing (§6.2.2); name
// must already be lower case.
func appendField(b []byte, name, value []byte) []byte {
	if i, ok := staticNames[string(name)]; ok {
		b = appendInt(b, 0, 4, uint64(i))
	} else {
		b = append(b, 0)
		b = appendString(b, name)
	}
	return appendString(b, value)
}

// appendLower appends name in lower case; HTTP/2 field names must be.
func appendLower(b []byte, name []byte) []byte {
	for _, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// tableSizeZero is a dynamic table size update to 0 (§6.3): sent at the
// start of the first header block after the client's
// SETTINGS_HEADER_TABLE_SIZE changed (and of the first block), it keeps
// this encoder's use of the table, none, within any limit the client sets.
const tableSizeZero = 0x20
