package backend

import (
	"errors"
	"os"
	"time"
)

// staleWait bounds WriteRead's wait for the first byte of an answer
// before it reads anyway. It only matters for a pooled conn the backend
// half-closed while it sat idle and whose FIN raised no edge WriteRead
// could see (see writeReader): a plain read finds that FIN at once, a
// wait would last until the read deadline. An answer slower than this
// costs one wake-up and one read more than it would have.
const staleWait = 200 * time.Millisecond

// WriteRead sends p (a whole request) and reads the start of the answer
// into buf. It returns the bytes read, whether all of p was sent (if
// not, err is the write's error and nothing was read), and the read's
// error (io.EOF when the backend closed). The read deadline is start +
// timeout (none when timeout is 0); the write deadline is the caller's.
//
// On a plain TCP socket (Linux) the read waits for the answer instead of
// trying first: one read(2) fewer per request (see writeReader).
func (c *Conn) WriteRead(p, buf []byte, start time.Time, timeout time.Duration) (n int, sent bool, err error) {
	if !c.wr.usable(c) {
		c.armRead(start, timeout)
		return c.writeThenRead(p, buf)
	}
	return c.writeRead(p, buf, start, timeout)
}

// writeThenRead is WriteRead through net.Conn.
func (c *Conn) writeThenRead(p, buf []byte) (int, bool, error) {
	c.unread = false // not known
	if _, err := c.Conn.Write(p); err != nil {
		return 0, false, err
	}
	n, err := c.Conn.Read(buf)
	return n, true, err
}

// Unread reports that the kernel said, as WriteRead's read returned,
// that more was left in the socket: bytes, or the backend's FIN (false
// when it did not say). A response that ended within the bytes WriteRead
// returned leaves the conn unfit for the pool if something followed it.
func (c *Conn) Unread() bool { return c.unread }

// armRead makes the read deadline start + timeout, moving it only when
// the one in force (c.ReadDeadline) would expire within ¾ of the
// timeout: every move re-arms a runtime timer (proxy/deadline.go does
// the same for the proxy's own reads).
func (c *Conn) armRead(start time.Time, timeout time.Duration) {
	if timeout <= 0 {
		if c.ReadDeadline != 0 { // a bounded wait's, see armWait
			c.ReadDeadline = 0
			c.SetReadDeadline(time.Time{})
		}
		return
	}
	n := start.UnixNano()
	if c.ReadDeadline-n >= int64(timeout)*3/4 {
		return
	}
	c.ReadDeadline = n + int64(timeout)
	c.SetReadDeadline(time.Unix(0, c.ReadDeadline))
}

// armWait makes the read deadline fall between staleWait/2 and
// staleWait from now, or at start + timeout if that is sooner: the bound
// on WriteRead's wait. Moved lazily as well: on a busy conn once per
// staleWait/2, not per request.
func (c *Conn) armWait(now, start time.Time, timeout time.Duration) {
	n := now.UnixNano()
	at := n + int64(staleWait)
	if timeout > 0 {
		at = min(at, start.UnixNano()+int64(timeout))
	}
	if left := c.ReadDeadline - n; left >= int64(staleWait)/2 && c.ReadDeadline <= at {
		return
	}
	c.ReadDeadline = at
	c.SetReadDeadline(time.Unix(0, at))
}

func isDeadline(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
