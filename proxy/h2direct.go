package proxy

import (
	"lbd/h2"
	"lbd/h2backend"
)

// Direct DATA between an HTTP/2 client's stream and its frame-level
// backend stream: the two connections' readers pass each other's data
// on without this exchange's goroutines (h2/direct.go and
// h2backend/direct.go say when they may). The proxy's goroutines stay in
// charge of everything else, and of any data the direct path refused:
// the request body's goroutine (pump) and the response relay
// (copyChunks) carry on as before, so flow control, resets, the end of
// the body and trailers are handled in one place each. The exchange is
// both the request's sink and the response's relay.

// directStream is implemented by the streams of package h2.
type directStream interface {
	TryWriteData(p []byte) bool
	SinkRequest(h2.RequestSink) bool
}

// attachSink makes x the direct path of the request body to s (after a
// detach, so the client's reader never sees sinkTo change under it).
func (x *h2Exchange) attachSink(s *h2backend.Stream) {
	if x.direct == nil {
		return
	}
	x.detachSink()
	x.sinkTo = s
	x.direct.SinkRequest(x) // false: the body ended or is counted by the proxy; the pump carries it
}

// detachSink stops the direct path of the request body.
func (x *h2Exchange) detachSink() {
	if x.sinkTo != nil {
		x.direct.SinkRequest(nil)
		x.sinkTo = nil
	}
}

// SendData implements h2.RequestSink: request data from the client's
// reader, sent on if the backend's windows allow it now. The backend
// stream writes it out (its connection's buffer), even once the exchange
// is over.
func (x *h2Exchange) SendData(p []byte) h2.Flusher {
	s := x.sinkTo
	if !s.TryWriteData(p) {
		return nil
	}
	x.activity()
	return s
}

// RelayData implements h2backend.ResponseRelay: response data from the
// backend connection's reader, sent on if the client can take it now.
func (x *h2Exchange) RelayData(p []byte) bool {
	if !x.direct.TryWriteData(p) {
		return false
	}
	x.activity()
	x.relayed.Add(int64(len(p)))
	return true
}

// startRelay lets s's reader relay the response body directly.
func (x *h2Exchange) startRelay(s *h2backend.Stream) {
	if x.direct != nil {
		s.SetRelay(x)
	}
}

// stopRelay ends it; the bytes relayed count as the response's.
func (x *h2Exchange) stopRelay(s *h2backend.Stream) {
	if x.direct != nil {
		s.SetRelay(nil)
		x.c.ex.bytes += x.relayed.Swap(0)
	}
}
