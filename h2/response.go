package h2

import (
	"bytes"
	"errors"

	"lbd/http1"
	"lbd/internal/h2frame"
)

// The proxy answers each stream with an HTTP/1.1 response that it has
// already checked (it parsed the backend's, or wrote its own). The
// encoder follows its framing as the bytes are written: the head becomes
// a HEADERS frame, the body DATA frames (chunk framing removed), trailers
// a final HEADERS frame, and END_STREAM marks the end the HTTP/1.1
// framing gave. Connection-specific fields are dropped (RFC 9113 §8.2.2).

// Encoder states.
const (
	rsHead       uint8 = iota // reading the response head (1xx heads are dropped)
	rsLength                  // Content-Length body
	rsChunked                 // chunked body
	rsUntilClose              // body ends when the proxy closes
	rsDone                    // response complete
)

// maxRespHead bounds a head split over several writes.
const maxRespHead = 64 << 10

var errProxy = errors.New("h2: bad response from the proxy")

type respEncoder struct {
	id        uint32 // stream the state belongs to
	state     uint8
	started   bool // part of a head was written
	keepAlive bool
	remaining int64
	head      []byte // a head split across writes
	resp      http1.Response
	chunks    http1.ChunkScanner
	trailer   []byte
	block     []byte // header block scratch; block[0] is kept for a table size update
	name      []byte
}

// write takes the proxy's bytes for stream id.
func (e *respEncoder) write(v *vconn, id uint32, isHEAD bool, p []byte) error {
	if e.id != id {
		*e = respEncoder{id: id, head: e.head[:0], resp: e.resp, trailer: e.trailer[:0], block: e.block, name: e.name}
	}
	for len(p) > 0 {
		var n int
		var err error
		switch e.state {
		case rsHead:
			n, err = e.writeHead(v, id, isHEAD, p)
		case rsLength:
			n = int(min(int64(len(p)), e.remaining))
			e.remaining -= int64(n)
			if err = v.sendData(id, p[:n], e.remaining == 0); err == nil && e.remaining == 0 {
				e.done(v, id)
			}
		case rsChunked:
			n, err = e.writeChunked(v, id, p)
		case rsUntilClose:
			n, err = len(p), v.sendData(id, p, false)
		default:
			return errProxy // bytes after the response
		}
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// writeHead parses the head once complete and sends it; it returns the
// bytes of p it used.
func (e *respEncoder) writeHead(v *vconn, id uint32, isHEAD bool, p []byte) (int, error) {
	e.started = true
	buf, before := p, 0
	if len(e.head) > 0 {
		before = len(e.head)
		e.head = append(e.head, p...)
		buf = e.head
	}
	err := http1.ParseResponseHead(buf, &e.resp, isHEAD)
	if errors.Is(err, http1.ErrNeedMore) {
		if before == 0 {
			e.head = append(e.head, p...)
		}
		if len(e.head) > maxRespHead {
			return 0, errProxy
		}
		return len(p), nil
	}
	if err != nil {
		return 0, errProxy
	}
	used := e.resp.HeadLen - before
	e.head = e.head[:0]
	switch {
	case e.resp.Status == 101:
		return 0, errProxy // no upgrade over HTTP/2: the proxy never asked for one
	case e.resp.Status < 200:
		return used, nil // interim: 100 Continue was answered by lbd itself
	}
	return used, e.sendHead(v, id, isHEAD)
}

// sendHead sends the final head and sets up the body.
func (e *respEncoder) sendHead(v *vconn, id uint32, isHEAD bool) error {
	r := &e.resp
	b := appendStatus(append(e.block[:0], tableSizeZero), r.Status)
	for i := range r.Headers {
		h := &r.Headers[i]
		if r.IsHopByHop(h.Name) {
			continue
		}
		e.name = appendLower(e.name[:0], h.Name)
		b = appendField(b, e.name, h.Value)
	}
	e.block = b
	e.keepAlive = r.KeepAlive
	kind := r.BodyKind(isHEAD)
	if err := v.sendHeaders(id, b, kind == http1.BodyNone); err != nil {
		return err
	}
	switch kind {
	case http1.BodyNone:
		e.done(v, id)
	case http1.BodyLength:
		e.state, e.remaining = rsLength, r.ContentLength
	case http1.BodyChunked:
		e.state = rsChunked
		e.chunks.Reset()
	default:
		e.state, e.keepAlive = rsUntilClose, false
	}
	return nil
}

// writeChunked sends chunk payloads as DATA and keeps the trailer lines.
func (e *respEncoder) writeChunked(v *vconn, id uint32, p []byte) (int, error) {
	i := 0
	for i < len(p) {
		if rem := e.chunks.Remaining(); rem > 0 {
			k := int(min(rem, int64(len(p)-i)))
			if err := v.sendData(id, p[i:i+k], false); err != nil {
				return i, err
			}
			e.chunks.Skip(int64(k))
			i += k
			continue
		}
		inTrailer := e.chunks.InTrailers()
		_, done, err := e.chunks.Scan(p[i : i+1])
		if err != nil {
			return i, errProxy
		}
		if inTrailer {
			e.trailer = append(e.trailer, p[i])
		}
		i++
		if done {
			return i, e.sendTrailers(v, id)
		}
	}
	return i, nil
}

// sendTrailers ends the stream: with the trailer fields as HEADERS, or
// an empty DATA frame when there are none.
func (e *respEncoder) sendTrailers(v *vconn, id uint32) error {
	b := append(e.block[:0], tableSizeZero)
	fields := 0
	for rest := e.trailer; len(rest) > 0; {
		line, after, _ := bytes.Cut(rest, []byte("\r\n"))
		rest = after
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		e.name = appendLower(e.name[:0], name)
		b = appendField(b, e.name, bytes.Trim(value, " \t"))
		fields++
	}
	e.block = b
	var err error
	if fields > 0 {
		err = v.sendHeaders(id, b, true)
	} else {
		err = v.sendData(id, nil, true)
	}
	if err == nil {
		e.done(v, id)
	}
	return err
}

func (e *respEncoder) done(v *vconn, id uint32) {
	e.state = rsDone
	v.finish(id, e.keepAlive)
}

// sendHeaders queues a header block for stream id; block[0] is a spare
// byte that carries a table size update when one is due.
func (v *vconn) sendHeaders(id uint32, block []byte, end bool) error {
	q := v.sc.out
	b, err := q.begin(false)
	if err != nil {
		return err
	}
	if v.cur.Load() != id {
		q.end(b)
		return errStreamGone
	}
	b = q.headers(b, id, block, end, int(v.sc.maxFrame.Load()))
	q.end(b)
	return nil
}

// sendData queues DATA for stream id within the flow-control windows,
// waiting (up to the write deadline) for the client to open them.
func (v *vconn) sendData(id uint32, data []byte, end bool) error {
	sc := v.sc
	for {
		n, err := sc.reserve(v, len(data))
		if err != nil {
			return err
		}
		if n > 0 || len(data) == 0 {
			q := sc.out
			b, err := q.begin(false)
			if err != nil {
				sc.unreserve(n)
				return err
			}
			if v.cur.Load() != id {
				q.end(b)
				sc.unreserve(n) // the stream is gone: its window is not
				return errStreamGone
			}
			last := n == len(data)
			q.end(h2frame.AppendData(b, id, data[:n], end && last))
			if last {
				return nil
			}
			data = data[n:]
			continue
		}
		if err := v.waitWindow(id); err != nil {
			return err
		}
	}
}

// waitWindow waits for a WINDOW_UPDATE (or a reset, or the deadline).
func (v *vconn) waitWindow(id uint32) error {
	if v.cur.Load() != id || v.closing.Load() {
		return errStreamGone
	}
	if v.wdl.passed() {
		return errDeadline
	}
	if err := wait(v.space, &v.wdl); err != nil {
		return err
	}
	if v.cur.Load() != id {
		return errStreamGone
	}
	return nil
}
