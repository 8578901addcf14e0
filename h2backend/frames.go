package h2backend

// Header-block encoding for the frame-level client (conn.go); its frames
// are appended to the connection's write buffer by package h2frame, so
// the frames of several streams leave in one write.

// Header blocks are encoded with HPACK literals that are never indexed
// (RFC 7541 §6.2.2), names from the static table where it has them: the
// encoder keeps no state, so a request's block is built by its own
// goroutine before it takes the connection, and the backend's decoder
// table stays empty.

// hpackInt appends an HPACK integer with an n-bit prefix (§5.1).
func hpackInt(b []byte, first byte, n uint, v uint64) []byte {
	limit := uint64(1)<<n - 1
	if v < limit {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(limit))
	v -= limit
	for v >= 128 {
		b = append(b, byte(v&0x7f)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func hpackString(b []byte, s []byte) []byte {
	return append(hpackInt(b, 0, 7, uint64(len(s))), s...)
}

// Static table indexes (RFC 7541 Appendix A) of the request's pseudo
// fields and of the few whole fields worth a single byte.
const (
	idxAuthority   = 1
	idxMethodGET   = 2
	idxMethodPOST  = 3
	idxPath        = 4
	idxSchemeHTTP  = 6
	idxSchemeHTTPS = 7
)

// appendIndexedName appends a literal whose name is static entry idx.
func appendIndexedName(b []byte, idx uint64, value []byte) []byte {
	return hpackString(hpackInt(b, 0x10, 4, idx), value)
}
