package h2backend

import (
	"errors"
	"io"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"lbd/internal/h2frame"
)

// readFrame reads one frame and acts on it; a non-zero code is a
// connection error. HEADERS and CONTINUATION payloads are read here and
// fed to the HPACK decoder, which hands each field to the stream.
func (c *conn) readFrame() (http2.ErrCode, error) {
	fh, err := c.fr.ReadFrameHeader()
	if err != nil {
		return 0, err
	}
	if c.blockOpen && (fh.Type != http2.FrameContinuation || fh.StreamID != c.blockID) {
		return http2.ErrCodeProtocol, nil // §6.10
	}
	switch fh.Type {
	case http2.FrameHeaders, http2.FrameContinuation:
		if cap(c.payload) < int(fh.Length) {
			c.payload = make([]byte, fh.Length)
		}
		p := c.payload[:fh.Length]
		if _, err := io.ReadFull(c.br, p); err != nil {
			return 0, err
		}
		if fh.Type == http2.FrameContinuation {
			if !c.blockOpen {
				return http2.ErrCodeProtocol, nil
			}
			return c.onFragment(p, fh.Flags.Has(http2.FlagContinuationEndHeaders)), nil
		}
		return c.onHeaders(fh, p), nil
	}
	f, err := c.fr.ReadFrameForHeader(fh)
	if err != nil {
		var se http2.StreamError
		if errors.As(err, &se) {
			c.resetStream(se.StreamID, se.Code, ErrBadResponse)
			return 0, nil
		}
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			return http2.ErrCode(ce), nil
		}
		return 0, err
	}
	return c.handle(f), nil
}

func (c *conn) handle(f http2.Frame) http2.ErrCode {
	switch f := f.(type) {
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.RSTStreamFrame:
		c.onReset(f.StreamID, f.ErrCode)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f.StreamID, f.Increment)
	case *http2.SettingsFrame:
		if !f.IsAck() {
			return c.onSettings(f)
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			var b [17]byte
			c.queue(h2frame.AppendPingAck(b[:0], f.Data))
		}
	case *http2.GoAwayFrame:
		c.onGoAway(f.LastStreamID)
	case *http2.PushPromiseFrame:
		return http2.ErrCodeProtocol // push is disabled in lbd's SETTINGS
	}
	return 0 // PRIORITY and unknown frame types are ignored (§5.5)
}

func (c *conn) lookup(id uint32) *Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

// onHeaders starts a header block: the response head (after any 1xx
// interim heads, dropped) or its trailers.
func (c *conn) onHeaders(fh http2.FrameHeader, p []byte) http2.ErrCode {
	if fh.StreamID == 0 {
		return http2.ErrCodeProtocol
	}
	if fh.Flags.Has(http2.FlagHeadersPadded) {
		if len(p) < 1 {
			return http2.ErrCodeFrameSize
		}
		pad := int(p[0])
		p = p[1:]
		if pad > len(p) {
			return http2.ErrCodeProtocol
		}
		p = p[:len(p)-pad]
	}
	if fh.Flags.Has(http2.FlagHeadersPriority) {
		if len(p) < 5 {
			return http2.ErrCodeFrameSize
		}
		p = p[5:]
	}
	c.blockID, c.blockEnd = fh.StreamID, fh.Flags.Has(http2.FlagHeadersEndStream)
	c.block = c.lookup(fh.StreamID)
	if c.block != nil {
		c.block.startBlock()
	}
	return c.onFragment(p, fh.Flags.Has(http2.FlagHeadersEndHeaders))
}

// onFragment decodes part of a header block and, at its end, hands the
// block to its stream. A stream lbd no longer has still has its block
// decoded, to keep the HPACK table in step.
func (c *conn) onFragment(p []byte, ended bool) http2.ErrCode {
	c.blockOpen = !ended
	if _, err := c.dec.Write(p); err != nil {
		return http2.ErrCodeCompression
	}
	if !ended {
		return 0
	}
	if err := c.dec.Close(); err != nil {
		return http2.ErrCodeCompression
	}
	s := c.block
	c.block = nil
	if s == nil {
		return 0
	}
	if code := s.endBlock(c.blockEnd); code != 0 {
		c.resetStream(s.id, code, ErrBadResponse)
	}
	return 0
}

// onField takes one decoded field for the block's stream.
func (c *conn) onField(f hpack.HeaderField) {
	if c.block != nil {
		c.block.field(f, c.maxHeader)
	}
}

// validField reports whether a response field may be relayed: a valid
// name in lower case, a value without CR, LF or NUL.
func validField(name, value string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return httpguts.ValidHeaderFieldName(name) && httpguts.ValidHeaderFieldValue(value)
}

// onData passes a DATA frame's payload to its stream, within the window
// lbd granted it.
func (c *conn) onData(f *http2.DataFrame) http2.ErrCode {
	n := int64(f.Length)
	c.connOwed += n
	var credit [26]byte // window updates for the connection and the stream
	b := credit[:0]
	if c.connOwed >= creditStep {
		b = h2frame.AppendWindowUpdate(b, 0, uint32(c.connOwed))
		c.connOwed = 0
	}
	s := c.lookup(f.StreamID)
	if s != nil { // else a stream lbd reset or finished: late frames are dropped
		code, more := s.data(f.Data(), n, f.StreamEnded())
		if code != 0 {
			c.resetStream(s.id, code, ErrBadResponse)
		} else if more > 0 {
			b = h2frame.AppendWindowUpdate(b, s.id, uint32(more))
		}
	}
	if len(b) > 0 {
		c.queue(b)
	}
	return 0
}

// onReset: the backend reset a stream.
func (c *conn) onReset(id uint32, code http2.ErrCode) {
	c.mu.Lock()
	s := c.streams[id]
	if s != nil {
		delete(c.streams, id)
	}
	idle := c.goAway && len(c.streams) == 0 && c.reserved == 0
	c.mu.Unlock()
	c.win.Broadcast()
	if s != nil {
		s.resetByPeer(code)
	}
	if idle {
		c.nc.Close()
	}
}

// resetStream resets a stream lbd gives up on, failing it with err.
func (c *conn) resetStream(id uint32, code http2.ErrCode, err error) {
	s := c.lookup(id)
	if s == nil {
		var b [13]byte
		c.control(h2frame.AppendRST(b[:0], id, code))
		return
	}
	s.lost(err)
	c.forget(s, true, code)
}

func (c *conn) onWindowUpdate(id uint32, inc uint32) http2.ErrCode {
	c.mu.Lock()
	defer c.win.Broadcast()
	defer c.mu.Unlock()
	if id == 0 {
		if c.sendWin+int64(inc) > maxWindow {
			return http2.ErrCodeFlowControl
		}
		c.sendWin += int64(inc)
		return 0
	}
	if s := c.streams[id]; s != nil {
		s.sendWin += int64(inc) // an overflow is the backend's problem: capped below
		s.sendWin = min(s.sendWin, maxWindow)
	}
	return 0
}

const maxWindow = 1<<31 - 1

// onSettings applies the backend's settings and acknowledges them.
func (c *conn) onSettings(f *http2.SettingsFrame) http2.ErrCode {
	code := http2.ErrCodeNo
	c.mu.Lock()
	_ = f.ForeachSetting(func(s http2.Setting) error { // fails only with the callback's error, always nil
		if s.Valid() != nil {
			code = http2.ErrCodeProtocol
			return nil
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			c.peerMax = s.Val
		case http2.SettingMaxFrameSize:
			c.peerFrame = int(s.Val)
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.peerWin
			c.peerWin = int64(s.Val)
			for _, st := range c.streams {
				st.sendWin += delta
			}
		}
		return nil
	})
	c.mu.Unlock()
	c.win.Broadcast()
	if code != 0 {
		return code
	}
	var b [9]byte
	c.queue(h2frame.AppendSettingsAck(b[:0]))
	return 0
}

// onGoAway: the backend takes no new streams; those above last were not
// processed and fail with ErrUnprocessed (the proxy may send them
// elsewhere), the others finish.
func (c *conn) onGoAway(last uint32) {
	c.mu.Lock()
	c.goAway = true
	var refused []*Stream
	for id, s := range c.streams {
		if id > last {
			refused = append(refused, s)
			delete(c.streams, id)
		}
	}
	idle := len(c.streams) == 0 && c.reserved == 0
	c.mu.Unlock()
	c.win.Broadcast()
	for _, s := range refused {
		s.lost(ErrUnprocessed)
	}
	c.pool.forgetConn(c)
	if idle {
		c.nc.Close()
	}
}
