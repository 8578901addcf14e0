package h2

import (
	"encoding/binary"
	"io"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// maxResets: a client that resets more streams than this, and more than
// it lets lbd answer, is closing streams to make the backends work for
// nothing (CVE-2023-44487, "rapid reset"); it is told to calm down.
const maxResets = 200

// readFrame reads the next frame and acts on it. HEADERS and
// CONTINUATION payloads are read and parsed here rather than by the
// Framer, which allocates a frame for every HEADERS; the Framer still
// checks their size and order (§6.10).
func (sc *serverConn) readFrame() (code http2.ErrCode, stop bool, err error) {
	fh, err := sc.fr.ReadFrameHeader()
	if err != nil {
		return 0, false, err
	}
	if fh.Type != http2.FrameHeaders && fh.Type != http2.FrameContinuation {
		f, err := sc.fr.ReadFrameForHeader(fh)
		if err != nil {
			return 0, false, err
		}
		code, stop = sc.handle(f)
		return code, stop, nil
	}
	if cap(sc.payload) < int(fh.Length) {
		sc.payload = make([]byte, fh.Length)
	}
	p := sc.payload[:fh.Length]
	if _, err := io.ReadFull(sc.br, p); err != nil {
		return 0, false, err
	}
	switch {
	case fh.StreamID == 0:
		return http2.ErrCodeProtocol, false, nil
	case fh.Type == http2.FrameContinuation:
		return sc.onBlockFragment(p, fh.Flags.Has(http2.FlagContinuationEndHeaders)), false, nil
	}
	return sc.onHeaders(fh, p), false, nil
}

// onHeaders starts a header block (§6.2): a new request, trailers of an
// open one, or a late block for a stream lbd reset, decoded only to keep
// the HPACK state in step.
func (sc *serverConn) onHeaders(fh http2.FrameHeader, p []byte) http2.ErrCode {
	id := fh.StreamID
	if id%2 == 0 {
		return http2.ErrCodeProtocol // client streams are odd (§5.1.1)
	}
	pad, selfDep := 0, false
	if fh.Flags.Has(http2.FlagHeadersPadded) {
		if len(p) < 1 {
			return http2.ErrCodeFrameSize
		}
		pad, p = int(p[0]), p[1:]
	}
	if fh.Flags.Has(http2.FlagHeadersPriority) {
		if len(p) < 5 {
			return http2.ErrCodeFrameSize
		}
		selfDep = binary.BigEndian.Uint32(p)&0x7fffffff == id // §5.3.1
		p = p[5:]
	}
	if pad > len(p) {
		return http2.ErrCodeProtocol
	}
	p = p[:len(p)-pad]
	sc.blockID, sc.blockEnd, sc.blockSize, sc.blockN = id, fh.Flags.Has(http2.FlagHeadersEndStream), 0, 0
	sc.blockBad = selfDep
	switch {
	case sc.lookup(id) != nil:
		sc.blockKind = blockTrailer
		sc.rb.reset(true)
	case id <= sc.maxSeen.Load():
		if !sc.resetByUs(id) {
			// A closed stream, or one skipped: stream ids only grow (§5.1.1).
			return http2.ErrCodeProtocol
		}
		sc.blockKind = blockIgnore
	default:
		sc.maxSeen.Store(id)
		sc.blockKind = blockRequest
		sc.rb.reset(false)
	}
	return sc.onBlockFragment(p, fh.Flags.Has(http2.FlagHeadersEndHeaders))
}

// onBlockFragment decodes part of a header block (HEADERS or
// CONTINUATION) and, at its end, acts on it.
func (sc *serverConn) onBlockFragment(frag []byte, ended bool) http2.ErrCode {
	sc.blockOpen = !ended
	sc.blockSize += len(frag)
	sc.blockN++
	if sc.blockN > maxBlockFrames || sc.blockSize > 2*sc.srv.opts.MaxHeaderBytes+16<<10 {
		return http2.ErrCodeEnhanceYourCalm // CONTINUATION flood (CVE-2024-27316 and kin)
	}
	if _, err := sc.dec.Write(frag); err != nil {
		return http2.ErrCodeCompression
	}
	if !ended {
		return 0
	}
	if err := sc.dec.Close(); err != nil {
		return http2.ErrCodeCompression
	}
	return sc.endBlock()
}

// onField receives each decoded field.
func (sc *serverConn) onField(f hpack.HeaderField) {
	if sc.blockKind != blockIgnore {
		sc.rb.field(f)
	}
}

// endBlock acts on a complete header block.
func (sc *serverConn) endBlock() http2.ErrCode {
	id := sc.blockID
	switch sc.blockKind {
	case blockIgnore:
		return 0
	case blockTrailer:
		// Trailers end the stream (§8.1); checked, and passed on with a
		// chunk-encoded body (vconn.trailers).
		if v := sc.lookup(id); v != nil {
			lines, ok := sc.rb.trailer()
			if code := v.trailers(id, lines, ok && sc.blockEnd && !sc.blockBad); code != 0 {
				sc.resetStream(id, code)
			}
		}
		return 0
	}
	head, req := sc.rb.head(sc.headBuf[:0], sc.blockEnd)
	sc.headBuf = head[:0]
	if req.malformed || sc.blockBad {
		sc.rst(id, http2.ErrCodeProtocol)
		return 0
	}
	sc.mu.Lock()
	// A stream counts against the limit until the proxy lets go of its
	// vconn, not just until lbd or the client reset it: otherwise resets
	// would let a client keep any number of backend exchanges running.
	busy := sc.vconns - len(sc.idle)
	refused := (sc.goingAway && id > sc.goAwayID) || max(len(sc.streams), busy) >= int(sc.srv.opts.MaxStreams)
	sc.mu.Unlock()
	switch {
	case refused:
		sc.rst(id, http2.ErrCodeRefusedStream)
	case req.status != 0:
		// It fails only once the connection is closing: nobody to answer.
		_ = sc.answer(nil, id, req.status, !sc.blockEnd)
	default:
		if sc.rb.expect100 && !sc.blockEnd {
			sc.interim(id) // before the proxy can answer
		}
		sc.dispatch(id, head, &req)
	}
	return 0
}

// dispatch hands a request to an idle vconn, or to a new one.
func (sc *serverConn) dispatch(id uint32, head []byte, req *request) {
	for {
		v := sc.takeIdle(id)
		if v == nil {
			v = newVconn(sc)
			sc.register(id, v)
			if !sc.srv.opts.Handoff(v) {
				sc.unregister(id, v)
				sc.rst(id, http2.ErrCodeRefusedStream)
				return
			}
			sc.mu.Lock()
			sc.vconns++
			sc.mu.Unlock()
		}
		if v.assign(id, head, req, sc.blockEnd, streamRecvWindow) {
			return
		}
		sc.unregister(id, v) // the proxy closed it meanwhile
	}
}

// takeIdle pops an idle vconn and registers it for stream id.
func (sc *serverConn) takeIdle(id uint32) *vconn {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	n := len(sc.idle)
	if n == 0 {
		return nil
	}
	v := sc.idle[n-1]
	sc.idle[n-1] = nil
	sc.idle = sc.idle[:n-1]
	sc.streams[id] = v
	v.sendWin, v.waiting = sc.initWin, false
	return v
}

func (sc *serverConn) register(id uint32, v *vconn) {
	sc.mu.Lock()
	sc.streams[id] = v
	v.sendWin = sc.initWin
	sc.mu.Unlock()
}

func (sc *serverConn) unregister(id uint32, v *vconn) {
	sc.mu.Lock()
	if sc.streams[id] == v {
		delete(sc.streams, id)
	}
	sc.mu.Unlock()
}

// onData passes request body to the stream's vconn, within the windows
// lbd granted.
func (sc *serverConn) onData(f *http2.DataFrame) http2.ErrCode {
	id, n := f.StreamID, int64(f.Length) // Length counts the padding too
	if sc.connRecv.Add(-n) < 0 {
		return http2.ErrCodeFlowControl
	}
	data := f.Data()
	v := sc.lookup(id)
	if v == nil {
		if id > sc.maxSeen.Load() {
			return http2.ErrCodeProtocol // DATA on an idle stream (§5.1)
		}
		sc.giveCredit(0, 0, n) // a closed stream: dropped
		if !sc.resetByUs(id) {
			sc.rst(id, http2.ErrCodeStreamClosed) // not a late frame: the client's mistake
		}
		return 0
	}
	if v.recvWin.Add(-n) < 0 {
		sc.giveCredit(0, 0, n)
		sc.resetStream(id, http2.ErrCodeFlowControl)
		return 0
	}
	if pad := n - int64(len(data)); pad > 0 {
		v.recvWin.Add(pad)
		sc.giveCredit(id, pad, pad)
	}
	if fl := v.sendDirect(id, data, f.StreamEnded()); fl != nil {
		sc.noteFlush(fl)
		return 0
	}
	code, taken := v.data(id, data, f.StreamEnded())
	if !taken {
		sc.giveCredit(0, 0, int64(len(data)))
	}
	if code != 0 {
		sc.resetStream(id, code)
	}
	return 0
}

// onReset: the client cancelled a stream.
func (sc *serverConn) onReset(id uint32) http2.ErrCode {
	if id > sc.maxSeen.Load() {
		return http2.ErrCodeProtocol // RST_STREAM on an idle stream (§6.4)
	}
	if v := sc.lookup(id); v != nil {
		v.kill(id, errStreamGone)
	}
	sc.resets++
	if sc.resets > maxResets && int64(sc.resets) > sc.answered.Load() {
		return http2.ErrCodeEnhanceYourCalm
	}
	return 0
}
