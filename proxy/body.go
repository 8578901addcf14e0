package proxy

import (
	"time"

	"lbd/backend"
)

// streamRequestBody copies the rest of the request body from the client
// to the backend through the connection's read buffer, so bytes after the
// body (a pipelined request) stay in the buffer for the next round.
func (c *conn) streamRequestBody(st *Listener, bc *backend.Conn) error {
	req := &c.req
	timeout := c.ex.be.TimeOut()
	for {
		if err := c.fill(st.Client); err != nil {
			return errClientIO
		}
		avail := (*c.buf)[c.r:c.w]
		var chunk []byte
		done := false
		if req.Chunked {
			n, fin, err := c.chunk.Scan(avail)
			if err != nil {
				return errBadRequest
			}
			chunk, done = avail[:n], fin
		} else {
			left := req.ContentLength - c.ex.bytes
			if int64(len(avail)) > left {
				avail = avail[:left]
			}
			chunk = avail
			c.ex.bytes += int64(len(chunk))
			done = c.ex.bytes == req.ContentLength
		}
		c.r += len(chunk)
		bc.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := bc.Write(chunk); err != nil {
			return errBackendIO
		}
		if done {
			return nil
		}
	}
}

// copyN copies exactly n bytes from src to dst through buf, with a read
// deadline of rto per read (Pound's TimeOut on every backend read, so a
// trickling backend cannot hold a client forever) and wto per write.
func copyN(dst, src deadliner, n int64, buf []byte, rto, wto time.Duration) (int64, error) {
	var done int64
	for done < n {
		p := buf
		if int64(len(p)) > n-done {
			p = p[:n-done]
		}
		src.SetReadDeadline(time.Now().Add(rto))
		k, err := src.Read(p)
		if k > 0 {
			dst.SetWriteDeadline(time.Now().Add(wto))
			if _, werr := dst.Write(p[:k]); werr != nil {
				return done, errClientIO
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
