package h2

import (
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// maxResets: a client that resets more streams than this, and more than
// it lets lbd answer, is closing streams to make the backends work for
// nothing (CVE-2023-44487, "rapid reset"); it is told to calm down.
const maxResets = 200

// onHeaders starts a header block: a new request, trailers of an open
// one, or a block for a stream already closed, decoded only to keep the
// HPACK state in step.
func (sc *serverConn) onHeaders(f *http2.HeadersFrame) http2.ErrCode {
	id := f.StreamID
	if id%2 == 0 {
		return http2.ErrCodeProtocol // client streams are odd (§5.1.1)
	}
	sc.blockID, sc.blockEnd, sc.blockSize, sc.blockN = id, f.StreamEnded(), 0, 0
	switch {
	case sc.lookup(id) != nil:
		sc.blockKind = blockTrailer
		sc.rb.reset(true)
	case id <= sc.maxSeen.Load():
		sc.blockKind = blockIgnore
	default:
		sc.maxSeen.Store(id)
		sc.blockKind = blockRequest
		sc.rb.reset(false)
	}
	return sc.onBlockFragment(f.HeaderBlockFragment(), f.HeadersEnded())
}

// onBlockFragment decodes part of a header block (HEADERS or
// CONTINUATION) and, at its end, acts on it.
func (sc *serverConn) onBlockFragment(frag []byte, ended bool) http2.ErrCode {
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
		// Trailers end the stream (§8.1); their fields are checked and
		// dropped, as HTTP/1.1 intermediaries may (RFC 9110 §6.5.1).
		if sc.rb.malformed || !sc.blockEnd {
			sc.resetStream(id, http2.ErrCodeProtocol)
		} else if v := sc.lookup(id); v != nil {
			if code := v.end(id); code != 0 {
				sc.resetStream(id, code)
			}
		}
		return 0
	}
	head, req := sc.rb.head(sc.headBuf[:0], sc.blockEnd)
	sc.headBuf = head[:0]
	if req.malformed {
		sc.rst(id, http2.ErrCodeProtocol)
		return 0
	}
	sc.mu.Lock()
	refused := (sc.goingAway && id > sc.goAwayID) || len(sc.streams) >= int(sc.srv.opts.MaxStreams)
	sc.mu.Unlock()
	switch {
	case refused:
		sc.rst(id, http2.ErrCodeRefusedStream)
	case req.status != 0:
		sc.answer(id, req.status, !sc.blockEnd)
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
