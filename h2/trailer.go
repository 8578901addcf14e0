package h2

import (
	"time"

	"golang.org/x/net/http2"
)

// Request trailers (RFC 9113 §8.1): a trailing HEADERS block ends the
// stream. Its fields, checked by reqBuilder.trailerField, go on as the
// trailer section of a chunk-encoded body, or, for a body passed on with
// its Content-Length, to the proxy on the side (RequestTrailer): its
// HTTP/2 backends forward them, HTTP/1.1 backends cannot take them.

// trailers takes a trailer block for stream id, its fields as HTTP/1.1
// lines; ok says it was valid and ended the stream, as trailers must. A
// chunk-encoded body carries the lines in its trailer section. A body
// passed on with its Content-Length cannot, in HTTP/1.1: the lines are
// kept for RequestTrailer, and an HTTP/1.1 backend goes without them
// (RFC 9110 §6.5.1 lets a recipient discard trailers; HAProxy does the
// same when it forwards such a request to HTTP/1.1).
func (v *vconn) trailers(id uint32, lines []byte, ok bool) http2.ErrCode {
	v.mu.Lock()
	defer signal(v.ready)
	defer v.mu.Unlock()
	switch {
	case v.id != id:
		return 0
	case v.endRecv:
		return http2.ErrCodeStreamClosed // half-closed (remote), §5.1
	case !ok:
		return http2.ErrCodeProtocol
	}
	if !v.chunked {
		v.trailer = append(v.trailer[:0], lines...)
	}
	return v.endLocked(lines)
}

// RequestTrailer implements proxy.TrailerSource: once the client ended
// the current stream, the trailer lines of a body passed on with its
// Content-Length (nil: none; a chunk-encoded body carries them in its
// trailer section). It waits at most patience for that end, and gives
// up (nil) as a read would: the stream is gone, or a read deadline
// passed (the proxy interrupts a body read that way).
func (v *vconn) RequestTrailer(patience time.Duration) []byte {
	var limit *time.Timer // only when it has to wait: the stream has usually ended
	defer func() {
		if limit != nil {
			limit.Stop()
		}
	}()
	for {
		v.mu.Lock()
		ended, gone, t := v.endRecv, v.rerr != nil || v.dead || v.closed || v.id == 0, v.trailer
		v.mu.Unlock()
		switch {
		case ended:
			return t
		case gone || v.rdl.passed():
			return nil
		case limit == nil:
			limit = time.NewTimer(patience)
		}
		select {
		case <-v.ready:
		case <-limit.C:
			return nil
		}
	}
}
