package proxy

import (
	"errors"
	"time"

	"lbd/backend"
)

// streamRequestBody copies the rest of the request body from the client
// to the backend through the connection's read buffer, so bytes after the
// body (a pipelined request) stay in the buffer for the next round.
func (c *conn) streamRequestBody(st *Listener, bc *backend.Conn) error {
	timeout := c.ex.be.TimeOut()
	rate := bodyRate{start: c.now}
	for {
		chunk, done, err := c.nextBodyPiece(st, &rate)
		if err != nil {
			return err
		}
		if c.ex.capture > 0 {
			c.captureChunk(chunk)
		}
		backendWrite(bc, time.Now(), timeout)
		if _, err := bc.Write(chunk); err != nil {
			return errBackendIO
		}
		if done {
			if c.ex.capture > 0 {
				c.captureDone()
			}
			return nil
		}
	}
}

// nextBodyPiece reads the next bytes of the request body from the client.
// The piece is valid until the next read into the buffer.
func (c *conn) nextBodyPiece(st *Listener, rate *bodyRate) (piece []byte, done bool, err error) {
	req := &c.req
	before := c.w - c.r // compaction in fill keeps this difference
	if err := c.fill(st.Client); err != nil {
		return nil, false, errClientIO
	}
	if !rate.ok(c.now, c.w-c.r-before, st.Client) {
		return nil, false, errBodyTooSlow
	}
	avail := (*c.buf)[c.r:c.w]
	if req.Chunked {
		n, fin, err := c.chunk.Scan(avail)
		if err != nil {
			return nil, false, errBadRequest
		}
		piece, done = avail[:n], fin
	} else {
		left := req.ContentLength - c.ex.bytes
		if int64(len(avail)) > left {
			avail = avail[:left]
		}
		piece = avail
		c.ex.bytes += int64(len(piece))
		done = c.ex.bytes == req.ContentLength
	}
	c.r += len(piece)
	return piece, done, nil
}

// copyN copies exactly n response body bytes from the backend to the
// client through buf. Every backend read has a deadline of rto (Pound's
// TimeOut applies to each read, so a trickling backend cannot hold a
// client forever) and every client write one of wto.
func (c *conn) copyN(st *Listener, bc *backend.Conn, n int64, buf []byte, rto, wto time.Duration) (int64, error) {
	var done int64
	for done < n {
		p := buf
		if int64(len(p)) > n-done {
			p = p[:n-done]
		}
		now := time.Now()
		backendRead(bc, now, rto)
		k, err := bc.Read(p)
		if k > 0 {
			if c.ex.wafResp {
				if werr := c.wafBodyPiece(st, p[:k], done+int64(k) == n); werr != nil {
					return done, werr
				}
			}
			c.dl.forWrite(c.nc, now, wto)
			if werr := c.writeClient(p[:k]); werr != nil {
				return done, errClientIO
			}
			if c.ex.cache != nil {
				c.cacheBody(p[:k])
			}
			done += int64(k)
		}
		if err != nil && done < n {
			if isTimeout(err) {
				return done, errTimeout
			}
			return done, errBackendIO
		}
	}
	return done, nil
}

// deadliner is the part of net.Conn the copy loops need.
type deadliner interface {
	Read([]byte) (int, error)
	Write([]byte) (int, error)
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// minBodyBytes is the least a request body must deliver in each Client
// period: a client that trickles a byte per period would otherwise hold
// its connection and a backend connection for as long as it likes.
const minBodyBytes = 1024

// errBodyTooSlow answers such a body with 408.
var errBodyTooSlow = errors.New("request body below the minimum rate")

// bodyRate measures a request body in windows of one Client period.
type bodyRate struct {
	start time.Time
	n     int
}

// ok adds the n bytes just read and reports whether the window that ended
// (if one did) delivered at least minBodyBytes.
func (r *bodyRate) ok(now time.Time, n int, period time.Duration) bool {
	r.n += n
	if period <= 0 || now.Sub(r.start) < period {
		return true
	}
	good := r.n >= minBodyBytes
	r.start, r.n = now, 0
	return good
}
