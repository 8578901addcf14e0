package h2frame

import (
	"bufio"
	"bytes"
	"testing"

	"golang.org/x/net/http2"
)

// TestFramesReadBack: what each appender writes is read back by x/net's
// Framer as the frame it stands for.
func TestFramesReadBack(t *testing.T) {
	block := bytes.Repeat([]byte{0x82}, 40) // 40 bytes of header block
	cases := []struct {
		name  string
		wire  []byte
		check func(t *testing.T, fs []http2.Frame)
	}{
		{"data with END_STREAM", AppendData(nil, 3, []byte("hello"), true), func(t *testing.T, fs []http2.Frame) {
			f := fs[0].(*http2.DataFrame)
			if f.StreamID != 3 || string(f.Data()) != "hello" || !f.StreamEnded() {
				t.Fatalf("%v %q", f.FrameHeader, f.Data())
			}
		}},
		{"headers in one frame", AppendHeaders(nil, 5, block, false, 16384), func(t *testing.T, fs []http2.Frame) {
			f := fs[0].(*http2.HeadersFrame)
			if len(fs) != 1 || f.StreamID != 5 || !f.HeadersEnded() || f.StreamEnded() || !bytes.Equal(f.HeaderBlockFragment(), block) {
				t.Fatalf("%d frames, %v", len(fs), f.FrameHeader)
			}
		}},
		{"headers split into CONTINUATION", AppendHeaders(nil, 7, block, true, 16), func(t *testing.T, fs []http2.Frame) {
			if len(fs) != 3 {
				t.Fatalf("%d frames, want HEADERS and two CONTINUATION", len(fs))
			}
			h := fs[0].(*http2.HeadersFrame)
			c1, c2 := fs[1].(*http2.ContinuationFrame), fs[2].(*http2.ContinuationFrame)
			if h.HeadersEnded() || !h.StreamEnded() || c1.HeadersEnded() || !c2.HeadersEnded() {
				t.Fatalf("flags: %v %v %v", h.FrameHeader, c1.FrameHeader, c2.FrameHeader)
			}
			got := append(append(append([]byte{}, h.HeaderBlockFragment()...), c1.HeaderBlockFragment()...), c2.HeaderBlockFragment()...)
			if !bytes.Equal(got, block) {
				t.Fatal("the block did not survive the split")
			}
		}},
		{"rst", AppendRST(nil, 9, http2.ErrCodeCancel), func(t *testing.T, fs []http2.Frame) {
			if f := fs[0].(*http2.RSTStreamFrame); f.StreamID != 9 || f.ErrCode != http2.ErrCodeCancel {
				t.Fatalf("%v %v", f.FrameHeader, f.ErrCode)
			}
		}},
		{"window update", AppendWindowUpdate(nil, 0, 65535), func(t *testing.T, fs []http2.Frame) {
			if f := fs[0].(*http2.WindowUpdateFrame); f.StreamID != 0 || f.Increment != 65535 {
				t.Fatalf("%v %d", f.FrameHeader, f.Increment)
			}
		}},
		{"goaway", AppendGoAway(nil, 11, http2.ErrCodeProtocol), func(t *testing.T, fs []http2.Frame) {
			if f := fs[0].(*http2.GoAwayFrame); f.LastStreamID != 11 || f.ErrCode != http2.ErrCodeProtocol {
				t.Fatalf("%d %v", f.LastStreamID, f.ErrCode)
			}
		}},
		{"ping ack", AppendPingAck(nil, [8]byte{1, 2, 3, 4, 5, 6, 7, 8}), func(t *testing.T, fs []http2.Frame) {
			if f := fs[0].(*http2.PingFrame); !f.IsAck() || f.Data != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
				t.Fatalf("%v %v", f.FrameHeader, f.Data)
			}
		}},
		{"settings and ack", AppendSettingsAck(AppendSettings(nil,
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})), func(t *testing.T, fs []http2.Frame) {
			s, ack := fs[0].(*http2.SettingsFrame), fs[1].(*http2.SettingsFrame)
			if v, ok := s.Value(http2.SettingMaxConcurrentStreams); !ok || v != 100 || s.NumSettings() != 2 || s.IsAck() || !ack.IsAck() {
				t.Fatalf("%v %v", s.FrameHeader, ack.FrameHeader)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One Framer per frame: a Framer's frame is valid only until
			// its next read, and the test keeps them all. Illegal reads
			// allowed: a CONTINUATION is then read on its own.
			var fs []http2.Frame
			for at := 0; at < len(tc.wire); at = frameEnd(tc.wire, len(fs)) {
				fr := http2.NewFramer(nil, bytes.NewReader(tc.wire[at:]))
				fr.AllowIllegalReads = true
				f, err := fr.ReadFrame()
				if err != nil {
					t.Fatalf("frame %d: %v", len(fs), err)
				}
				fs = append(fs, f)
			}
			if len(fs) == 0 {
				t.Fatal("no frame read back")
			}
			tc.check(t, fs)
		})
	}
}

// frameEnd is where the first n frames of wire end.
func frameEnd(wire []byte, n int) int {
	at := 0
	for ; n > 0; n-- {
		at += 9 + (int(wire[at])<<16 | int(wire[at+1])<<8 | int(wire[at+2]))
	}
	return at
}

// TestWholeFrameBuffered: a reader may hold back its writes only while
// the next frame is entirely in its buffer.
func TestWholeFrameBuffered(t *testing.T) {
	frame := AppendData(nil, 1, []byte("hello"), false)
	tests := []struct {
		name string
		in   []byte
		want bool
	}{
		{"empty", nil, false},
		{"part of a header", frame[:5], false},
		{"header without payload", frame[:9], false},
		{"all but one byte", frame[:len(frame)-1], false},
		{"whole frame", frame, true},
		{"frame and part of the next", append(append([]byte(nil), frame...), frame[:3]...), true},
		{"empty payload", AppendSettingsAck(nil), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(bytes.NewReader(tc.in))
			_, _ = br.Peek(len(tc.in)) // fills the buffer; an error (EOF on empty input) leaves it as it is
			if got := WholeFrameBuffered(br); got != tc.want {
				t.Errorf("WholeFrameBuffered = %v, want %v", got, tc.want)
			}
		})
	}
}
