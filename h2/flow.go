package h2

import (
	"golang.org/x/net/http2"

	"lbd/internal/h2frame"
)

// Flow control (RFC 9113 §5.2, §6.9): the send windows the client grants
// lbd's responses, and the receive windows lbd gives back as the proxy
// takes request bodies.

// setInitialWindow moves every open stream's send window by the change
// (§6.9.2); false if one overflows.
func (sc *serverConn) setInitialWindow(w int64) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	delta := w - sc.initWin
	sc.initWin = w
	for _, v := range sc.streams {
		v.sendWin += delta
		if v.sendWin > maxWindow {
			return false
		}
		if v.waiting && v.sendWin > 0 {
			v.waiting = false
			signal(v.space)
		}
	}
	return true
}

// onWindowUpdate opens a send window and wakes the streams waiting on it.
func (sc *serverConn) onWindowUpdate(id, inc uint32) http2.ErrCode {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if id == 0 {
		if sc.sendWin += int64(inc); sc.sendWin > maxWindow {
			return http2.ErrCodeFlowControl
		}
		for _, v := range sc.streams {
			if v.waiting {
				v.waiting = false
				signal(v.space)
			}
		}
		return 0
	}
	v := sc.streams[id]
	if v == nil {
		if id > sc.maxSeen.Load() {
			return http2.ErrCodeProtocol // on an idle stream (§5.1)
		}
		return 0 // a closed stream
	}
	if v.sendWin += int64(inc); v.sendWin > maxWindow {
		sc.mu.Unlock()
		sc.resetStream(id, http2.ErrCodeFlowControl)
		sc.mu.Lock()
		return 0
	}
	if v.waiting {
		v.waiting = false
		signal(v.space)
	}
	return 0
}

// reserve takes up to want bytes of send window for v (and at most a
// frame). 0 with no error means: wait for a WINDOW_UPDATE.
func (sc *serverConn) reserve(v *vconn, want int) (int, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return 0, errConnClosed
	}
	n := min(int64(want), sc.sendWin, v.sendWin, int64(sc.maxFrame.Load()))
	if n <= 0 {
		if want > 0 {
			v.waiting = true
		}
		return 0, nil
	}
	sc.sendWin -= n
	v.sendWin -= n
	return int(n), nil
}

// unreserve returns connection window that reserve took for DATA that
// was never sent.
func (sc *serverConn) unreserve(n int) {
	if n <= 0 {
		return
	}
	sc.mu.Lock()
	sc.sendWin += int64(n)
	for _, v := range sc.streams {
		if v.waiting {
			v.waiting = false
			signal(v.space)
		}
	}
	sc.mu.Unlock()
}

// giveCredit returns window to the client for request body the proxy
// has taken: the stream's at once, the connection's in larger steps.
func (sc *serverConn) giveCredit(id uint32, stream, conn int64) {
	sc.connRecv.Add(conn)
	owed := sc.connCredit.Add(conn)
	if owed < connCreditStep && stream == 0 {
		return
	}
	if owed >= connCreditStep && !sc.connCredit.CompareAndSwap(owed, 0) {
		owed = 0 // another goroutine sends it
	} else if owed < connCreditStep {
		owed = 0
	}
	b, err := sc.out.begin(true)
	if err != nil {
		return
	}
	if owed > 0 {
		b = h2frame.AppendWindowUpdate(b, 0, uint32(owed))
	}
	if stream > 0 {
		b = h2frame.AppendWindowUpdate(b, id, uint32(stream))
	}
	sc.out.end(b)
}
