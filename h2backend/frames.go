package h2backend

import (
	"encoding/binary"

	"golang.org/x/net/http2"
)

// Frame and header-block encoding for the frame-level client (conn.go).
// Frames are appended to the connection's write buffer, so the frames of
// several streams leave in one write; x/net's Framer, which writes each
// frame on its own, is only used for reading.

func appendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(id>>24)&0x7f, byte(id>>16), byte(id>>8), byte(id))
}

func appendData(b []byte, id uint32, data []byte, end bool) []byte {
	var fl http2.Flags
	if end {
		fl = http2.FlagDataEndStream
	}
	b = appendFrameHeader(b, len(data), http2.FrameData, fl, id)
	return append(b, data...)
}

// appendHeaders writes a header block as HEADERS and, beyond maxFrame,
// CONTINUATION frames, which must follow with nothing in between.
func appendHeaders(b []byte, id uint32, block []byte, end bool, maxFrame int) []byte {
	var fl http2.Flags
	if end {
		fl = http2.FlagHeadersEndStream
	}
	typ := http2.FrameHeaders
	for {
		n := min(len(block), maxFrame)
		f := fl
		if n == len(block) {
			f |= http2.FlagHeadersEndHeaders
		}
		b = appendFrameHeader(b, n, typ, f, id)
		b = append(b, block[:n]...)
		block = block[n:]
		if len(block) == 0 {
			return b
		}
		typ, fl = http2.FrameContinuation, 0
	}
}

func appendRST(b []byte, id uint32, code http2.ErrCode) []byte {
	b = appendFrameHeader(b, 4, http2.FrameRSTStream, 0, id)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

func appendWindowUpdate(b []byte, id uint32, inc uint32) []byte {
	b = appendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, id)
	return binary.BigEndian.AppendUint32(b, inc&0x7fffffff)
}

func appendGoAway(b []byte, last uint32, code http2.ErrCode) []byte {
	b = appendFrameHeader(b, 8, http2.FrameGoAway, 0, 0)
	b = binary.BigEndian.AppendUint32(b, last&0x7fffffff)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

func appendPingAck(b []byte, data [8]byte) []byte {
	b = appendFrameHeader(b, 8, http2.FramePing, http2.FlagPingAck, 0)
	return append(b, data[:]...)
}

func appendSettings(b []byte, settings ...http2.Setting) []byte {
	b = appendFrameHeader(b, 6*len(settings), http2.FrameSettings, 0, 0)
	for _, s := range settings {
		b = binary.BigEndian.AppendUint16(b, uint16(s.ID))
		b = binary.BigEndian.AppendUint32(b, s.Val)
	}
	return b
}

func appendSettingsAck(b []byte) []byte {
	return appendFrameHeader(b, 0, http2.FrameSettings, http2.FlagSettingsAck, 0)
}

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
