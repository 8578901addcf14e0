// Package h2frame appends HTTP/2 frames (RFC 9113 §6) to a byte slice.
// The front end (package h2) and the backend client (package h2backend)
// both gather several streams' frames into one write buffer, which x/net's
// Framer, writing each frame on its own, does not do; both read with it.
package h2frame

import (
	"bufio"
	"encoding/binary"

	"golang.org/x/net/http2"
)

// AppendFrameHeader appends a frame header (RFC 9113 §4.1).
func AppendFrameHeader(b []byte, length int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(t), byte(flags),
		byte(id>>24)&0x7f, byte(id>>16), byte(id>>8), byte(id))
}

// AppendData appends a DATA frame.
func AppendData(b []byte, id uint32, data []byte, end bool) []byte {
	var fl http2.Flags
	if end {
		fl = http2.FlagDataEndStream
	}
	b = AppendFrameHeader(b, len(data), http2.FrameData, fl, id)
	return append(b, data...)
}

// AppendHeaders writes a header block as HEADERS and, beyond maxFrame,
// CONTINUATION frames, which must follow with nothing in between.
func AppendHeaders(b []byte, id uint32, block []byte, end bool, maxFrame int) []byte {
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
		b = AppendFrameHeader(b, n, typ, f, id)
		b = append(b, block[:n]...)
		block = block[n:]
		if len(block) == 0 {
			return b
		}
		typ, fl = http2.FrameContinuation, 0
	}
}

// AppendRST appends an RST_STREAM frame.
func AppendRST(b []byte, id uint32, code http2.ErrCode) []byte {
	b = AppendFrameHeader(b, 4, http2.FrameRSTStream, 0, id)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

// AppendWindowUpdate appends a WINDOW_UPDATE frame.
func AppendWindowUpdate(b []byte, id uint32, inc uint32) []byte {
	b = AppendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, id)
	return binary.BigEndian.AppendUint32(b, inc&0x7fffffff)
}

// AppendGoAway appends a GOAWAY frame without debug data.
func AppendGoAway(b []byte, last uint32, code http2.ErrCode) []byte {
	b = AppendFrameHeader(b, 8, http2.FrameGoAway, 0, 0)
	b = binary.BigEndian.AppendUint32(b, last&0x7fffffff)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

// AppendPingAck appends the acknowledgement of a PING.
func AppendPingAck(b []byte, data [8]byte) []byte {
	b = AppendFrameHeader(b, 8, http2.FramePing, http2.FlagPingAck, 0)
	return append(b, data[:]...)
}

// AppendSettings appends a SETTINGS frame.
func AppendSettings(b []byte, settings ...http2.Setting) []byte {
	b = AppendFrameHeader(b, 6*len(settings), http2.FrameSettings, 0, 0)
	for _, s := range settings {
		b = binary.BigEndian.AppendUint16(b, uint16(s.ID))
		b = binary.BigEndian.AppendUint32(b, s.Val)
	}
	return b
}

// AppendSettingsAck appends the acknowledgement of a SETTINGS frame.
func AppendSettingsAck(b []byte) []byte {
	return AppendFrameHeader(b, 0, http2.FrameSettings, http2.FlagSettingsAck, 0)
}

// WholeFrameBuffered reports whether br holds a whole frame already, so
// that reading it will not wait for the peer. A reader that batches its
// writes (acknowledgements, relayed data) writes them out when it does
// not: the rest of a frame may come only after the peer has them.
func WholeFrameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < frameHeaderLen {
		return false
	}
	h, err := br.Peek(frameHeaderLen) // buffered: no read
	if err != nil {
		return false
	}
	return n >= frameHeaderLen+(int(h[0])<<16|int(h[1])<<8|int(h[2]))
}

const frameHeaderLen = 9
