package h2backend

import (
	"errors"
	"io"
	"strconv"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"lbd/internal/h2frame"
)

// Stream is one request on a frame-level connection (Pool.Open). One
// goroutine reads its response (ReadHead, then Read), one at a time
// sends its request data (WriteData); Cancel may come from any
// goroutine. Close ends it.
type Stream struct {
	c       *conn
	id      uint32
	sendWin int64 // under c.mu: the backend's window for this stream

	mu       sync.Mutex
	ready    chan struct{} // cap 1: the response moved on
	localEnd bool          // lbd sent END_STREAM
	headDone bool          // the response head is complete
	ended    bool          // the backend sent END_STREAM
	err      error         // what ended the stream early
	body     []byte        // response data not yet read, from off
	off      int
	recvWin  int64 // window the backend has left
	taken    int64 // data read and not yet given back as window
	received int64 // response data received, against contentLength
	// relay takes response data straight from the reader (direct.go);
	// draining: the proxy Read data it may not have relayed yet.
	relay    ResponseRelay
	draining bool

	// Written by the reader goroutine until headDone (head) or ended
	// (trailer) is published under mu; read by the proxy after that.
	status        int
	contentLength int64
	head          []byte // the head's fields as HTTP/1.1 lines
	trailer       []byte // the trailers, likewise

	// Reader goroutine only: the header block being decoded.
	blockBad bool
}

func newStream() *Stream {
	return &Stream{ready: make(chan struct{}, 1), recvWin: streamWindow, contentLength: -1}
}

func (s *Stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// startBlock prepares for a header block: the head (again, after an
// interim 1xx one) or the trailers.
func (s *Stream) startBlock() {
	s.blockBad = false
	s.mu.Lock()
	head := s.headDone
	s.mu.Unlock()
	if !head {
		s.head, s.status, s.contentLength = s.head[:0], 0, -1
	} else {
		s.trailer = s.trailer[:0]
	}
}

// field takes one decoded field of the block. Fields are kept as
// HTTP/1.1 header lines with canonical names, which is what the proxy
// relays; anything HTTP/2 forbids in a response makes it malformed
// (RFC 9113 §8.2, §8.3).
func (s *Stream) field(f hpack.HeaderField, maxBytes int) {
	trailers := s.headDone // set only by this goroutine
	if len(f.Name) > 0 && f.Name[0] == ':' {
		if f.Name != ":status" || trailers || s.status != 0 || len(s.head) > 0 || len(f.Value) != 3 {
			s.blockBad = true
			return
		}
		n, err := strconv.Atoi(f.Value)
		if err != nil || n < 100 {
			s.blockBad = true
		}
		s.status = n
		return
	}
	if !validField(f.Name, f.Value) {
		s.blockBad = true
		return
	}
	switch f.Name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		s.blockBad = true
		return
	case "content-length":
		n, err := strconv.ParseInt(f.Value, 10, 64)
		if err != nil || n < 0 || trailers || (s.contentLength >= 0 && s.contentLength != n) {
			s.blockBad = true
		}
		s.contentLength = n
		return
	}
	dst := &s.head
	if trailers {
		dst = &s.trailer
	}
	b := *dst
	start := len(b)
	b = append(b, f.Name...)
	upper := true
	for i := start; i < len(b); i++ {
		if c := b[i]; upper && 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
		upper = b[i] == '-'
	}
	b = append(append(append(append(b, ':', ' '), f.Value...), '\r'), '\n')
	*dst = b
	if len(b) > maxBytes {
		s.blockBad = true
	}
}

// endBlock acts on a complete header block; a non-zero code resets the
// stream.
func (s *Stream) endBlock(end bool) http2.ErrCode {
	if s.blockBad {
		return http2.ErrCodeProtocol
	}
	s.mu.Lock()
	defer s.signal()
	defer s.mu.Unlock()
	switch {
	case s.ended:
		return http2.ErrCodeStreamClosed
	case s.headDone: // trailers end the stream (§8.1)
		if !end {
			return http2.ErrCodeProtocol
		}
		s.ended = true
	case s.status == 0:
		return http2.ErrCodeProtocol
	case s.status < 200: // an interim head, dropped: the final one follows
		if end {
			return http2.ErrCodeProtocol
		}
	default:
		s.headDone, s.ended = true, end
	}
	return 0
}

// data takes a DATA frame's payload; n is the frame's length, padding
// included, which the window counts. The payload goes to the relay when
// it can (direct.go), else into the buffer the proxy Reads. credit is
// stream window to give back now.
func (s *Stream) data(p []byte, n int64, end bool) (code http2.ErrCode, credit int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended:
		return http2.ErrCodeStreamClosed, 0
	case !s.headDone:
		return http2.ErrCodeProtocol, 0
	}
	if s.recvWin -= n; s.recvWin < 0 {
		return http2.ErrCodeFlowControl, 0
	}
	s.received += int64(len(p))
	if cl := s.contentLength; cl >= 0 && (s.received > cl || end && s.received != cl) {
		return http2.ErrCodeProtocol, 0 // §8.1.1
	}
	s.taken += n - int64(len(p)) // padding is consumed on arrival
	if s.relayNow(p) {
		s.taken += int64(len(p))
		s.ended = end
		if end {
			s.signal() // the proxy's goroutine ends the response
		}
		return 0, s.takeCredit()
	}
	if s.off > 0 && s.off >= len(s.body)/2 {
		s.body, s.off = s.body[:copy(s.body, s.body[s.off:])], 0
	}
	s.body = append(s.body, p...)
	s.ended = end
	s.signal()
	return 0, 0
}

// lost fails the stream with err (unless its response is complete).
func (s *Stream) lost(err error) {
	s.mu.Lock()
	if s.err == nil && !s.ended {
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

// resetByPeer: the backend reset the stream. REFUSED_STREAM before a
// response means it did not process it (§8.7).
func (s *Stream) resetByPeer(code http2.ErrCode) {
	s.mu.Lock()
	if s.err == nil && !s.ended {
		if code == http2.ErrCodeRefusedStream && !s.headDone {
			s.err = ErrUnprocessed
		} else {
			s.err = http2.StreamError{StreamID: s.id, Code: code}
		}
	}
	s.mu.Unlock()
	s.signal()
}

// ReadHead waits for the response head. fields are its header lines
// ("Name: value\r\n", no Content-Length); contentLength is -1 when the
// backend gave none; ended says the response has no body or trailers
// to come (a trailers-only response carries its status in fields).
func (s *Stream) ReadHead() (status int, fields []byte, contentLength int64, ended bool, err error) {
	for {
		s.mu.Lock()
		if s.headDone {
			ended = s.ended && s.off == len(s.body)
			s.mu.Unlock()
			return s.status, s.head, s.contentLength, ended, nil
		}
		err = s.err
		s.mu.Unlock()
		if err != nil {
			return 0, nil, 0, false, err
		}
		<-s.ready
	}
}

// Read reads response data; io.EOF once the backend ended the stream,
// after which Trailer has its trailers. Data taken is given back to the
// backend as window, so it sends as fast as the proxy relays.
func (s *Stream) Read(p []byte) (int, error) {
	for {
		s.mu.Lock()
		s.draining = false // the data of the last Read was relayed
		if s.off < len(s.body) {
			n := copy(p, s.body[s.off:])
			s.off += n
			s.taken += int64(n)
			s.draining = true
			credit := s.takeCredit()
			s.mu.Unlock()
			if credit > 0 {
				var b [13]byte
				s.c.control(h2frame.AppendWindowUpdate(b[:0], s.id, uint32(credit)))
			}
			return n, nil
		}
		ended, err := s.ended, s.err
		s.mu.Unlock()
		switch {
		case ended:
			return 0, io.EOF
		case err != nil:
			return 0, err
		}
		<-s.ready
	}
}

// Trailer is the response's trailer lines, once Read returned io.EOF.
func (s *Stream) Trailer() []byte { return s.trailer }

// WriteData sends request data within the backend's windows, waiting
// for them; end ends the request.
func (s *Stream) WriteData(p []byte, end bool) error {
	c := s.c
	for {
		c.mu.Lock()
		var n int
		for {
			if err := s.writeErr(); err != nil {
				c.mu.Unlock()
				if err == errResponseDone {
					return nil
				}
				return err
			}
			n = int(min(int64(len(p)), s.sendWin, c.sendWin, int64(c.peerFrame)))
			if n > 0 || len(p) == 0 {
				break
			}
			c.win.Wait()
		}
		s.sendWin -= int64(n)
		c.sendWin -= int64(n)
		last := end && n == len(p)
		w := c.begin()
		c.mu.Unlock()
		c.commit(h2frame.AppendData(w, s.id, p[:n], last))
		if last {
			s.mu.Lock()
			s.localEnd = true
			s.mu.Unlock()
		}
		if err := c.flush(); err != nil {
			return err
		}
		if p = p[n:]; len(p) == 0 {
			return nil
		}
		if err := c.waitRoom(); err != nil {
			return err
		}
	}
}

// WriteTrailers ends the request with a trailer block (a RequestBlock
// without Start): a HEADERS frame with END_STREAM after the last DATA
// (RFC 9113 §8.1). Header frames take no flow-control window.
func (s *Stream) WriteTrailers(block []byte) error {
	c := s.c
	c.mu.Lock()
	if err := s.writeErr(); err != nil {
		c.mu.Unlock()
		if err == errResponseDone {
			return nil
		}
		return err
	}
	maxFrame := c.peerFrame
	w := c.begin()
	c.mu.Unlock()
	c.commit(h2frame.AppendHeaders(w, s.id, block, true, maxFrame))
	s.mu.Lock()
	s.localEnd = true
	s.mu.Unlock()
	return c.flush()
}

// writeErr says why data can no longer be sent; called with c.mu held.
// A stream whose response is complete takes no more data, which is then
// dropped without error (the backend answered without reading it all).
func (s *Stream) writeErr() error {
	if s.c.streams[s.id] == s {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.err != nil:
		return s.err
	case s.ended:
		return errResponseDone
	}
	return ErrCanceled
}

// errResponseDone: WriteData on a stream the backend finished.
var errResponseDone = errors.New("h2backend: response complete")

// Cancel resets the stream (RST_STREAM CANCEL) unless it is complete,
// and wakes its reader and writer; they return ErrCanceled.
func (s *Stream) Cancel() {
	s.mu.Lock()
	done := s.ended && s.localEnd
	if s.err == nil && !s.ended {
		s.err = ErrCanceled
	}
	s.mu.Unlock()
	s.signal()
	s.c.forget(s, !done, http2.ErrCodeCancel)
}

// Close lets the stream go: one still open either way is reset.
func (s *Stream) Close() {
	s.mu.Lock()
	done := s.ended && s.localEnd
	s.mu.Unlock()
	s.c.forget(s, !done, http2.ErrCodeCancel)
}
