package h2

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/http2"

	"lbd/internal/h2frame"
	"lbd/internal/idlewait"
)

// An HTTP/2-over-TLS connection without streams is parked after
// parkAfter: its reader and writer goroutines end, the proxy's idle
// vconns retire (their goroutines and buffers), the read buffer, the
// Framer and the header scratch go, and its socket waits in an epoll
// set (package idlewait). What stays is what must: the tls.Conn (keys,
// sequence numbers), the HPACK decoder's dynamic table at its
// negotiated size, the settings, windows and stream history, the idle
// timer. Readability (a frame, a close_notify, a FIN) runs the reader
// again in a new goroutine; a shutdown or the idle timeout takes the
// connection back first (wakeUp). bench/RESULTS.md §39 has the figures.
//
// The wait for the next frame uses a read deadline of parkAfter, set
// lazily (moved only when the one in force is not within the last
// quarter of it) and only before reading at a frame boundary with
// nothing buffered; a deadline that passes in any other read is
// cleared and the read retried (parkReader), so a frame is never cut.
//
// The delay is parkAfter, or parkSoon while the server has more than
// parkCrowd connections not parked: a crowd of waiting connections
// (three goroutines and some 60 KiB each) is what memory goes to, and
// what Go keeps of it for ever (the g structures, fragmentation) grows
// with how many wait at once; a quiet server's clients pausing for
// less than a second never pay a park and resume. (The proxy's parker
// for HTTP/1.1 does the same, with a crowd of 256 since RESULTS §44
// measured what a burst of waiting HTTP/1.1 connections leaves behind;
// HTTP/2's 1,000 was not measured that way and stays.)
var (
	parkAfter = time.Second // variables for the tests
	parkSoon  = 200 * time.Millisecond
)

const parkCrowd = 1000

func (s *Server) parkDelay() time.Duration {
	if s.open.Load()-s.parked.Load() > parkCrowd {
		return parkSoon
	}
	return parkAfter
}

// parking is a connection's parking state.
type parking struct {
	set *idlewait.Set   // nil: this connection is never parked
	rc  syscall.RawConn // its socket
	rd  io.Reader       // what br reads, for resuming
	// Reader goroutine only: the idle deadline in force (UnixNano, 0:
	// none of ours), and whether the reader waits at a frame boundary.
	deadline, delay int64
	waiting         bool
	// Under sc.mu.
	parked bool
	ticket idlewait.Ticket
	count  int // times parked
}

// initParking makes c's connection parkable when it is TLS over a
// socket (plain h2c connections, on raw reads, are not) and its idle
// timeout outlasts parkAfter; it returns what the reader should read.
func (sc *serverConn) initParking(c net.Conn, rd io.Reader) io.Reader {
	if sc.srv.opts.IdleTimeout <= parkAfter {
		return rd
	}
	rc, set := idlewait.TLSSocket(c), idlewait.Default()
	if rc == nil || set == nil {
		return rd
	}
	sc.park = parking{set: set, rc: rc, rd: &parkReader{sc: sc, r: rd}}
	return sc.park.rd
}

// parkReader is the reader's source on a parkable connection: a read
// that meets the idle deadline anywhere but at the wait for a frame
// clears it and goes on.
type parkReader struct {
	sc *serverConn
	r  io.Reader
}

func (p *parkReader) Read(b []byte) (int, error) {
	for {
		n, err := p.r.Read(b)
		pk := &p.sc.park
		if n > 0 || err == nil || pk.waiting || pk.deadline == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		pk.deadline = 0
		p.sc.nc.SetReadDeadline(time.Time{}) // an error would come back from the read
	}
}

// run reads and dispatches frames until the connection ends (false) or
// is parked (true: it is no longer this goroutine's).
func (sc *serverConn) run() (parked bool) {
	for {
		if sc.idleWait() {
			return true
		}
		code, stop, err := sc.readFrame()
		if len(sc.flushes) > 0 && (err != nil || !h2frame.WholeFrameBuffered(sc.br)) {
			sc.flushSinks() // the frames read are handled: one write for their data
		}
		if err != nil {
			if !sc.readError(err) {
				return false
			}
			continue
		}
		if code != http2.ErrCodeNo {
			sc.goAway(code)
			return false
		}
		if stop {
			return false
		}
	}
}

// idleWait waits for the next frame at a frame boundary with nothing
// buffered, under parkAfter's deadline, and parks the connection (true)
// once the deadline finds it without streams. While streams are open
// (the proxy answering) it waits again: their end does not wake a read.
func (sc *serverConn) idleWait() bool {
	pk := &sc.park
	if pk.set == nil || sc.br.Buffered() > 0 || sc.blockOpen || len(sc.flushes) > 0 {
		return false
	}
	for {
		// Lazily: moved (and the delay asked) only when the deadline in
		// force is not an idle one ending between 3/4 of its delay and
		// its delay from now.
		now := time.Now().UnixNano()
		if left := pk.deadline - now; left > pk.delay || left < pk.delay*3/4 {
			pk.delay = int64(sc.srv.parkDelay())
			pk.deadline = now + pk.delay
			sc.nc.SetReadDeadline(time.Unix(0, pk.deadline))
		}
		pk.waiting = true
		_, err := sc.br.Peek(1)
		pk.waiting = false
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return false // a frame, or an error the frame's read meets again
		}
		if parked, again := sc.parkNow(); !again {
			return parked
		}
	}
}

// parkNow parks the connection. Not parked, again says that it has
// streams (wait more); otherwise it is going away or its socket could
// not be registered.
func (sc *serverConn) parkNow() (parked, again bool) {
	sc.mu.Lock()
	retire, parked, again := sc.parkLocked()
	sc.mu.Unlock()
	// Outside the lock, as checkIdle does: the proxy's goroutines of the
	// idle vconns end, with their buffers.
	for _, v := range retire {
		v.retire()
	}
	return parked, again
}

func (sc *serverConn) parkLocked() (retire []*vconn, parked, again bool) {
	if len(sc.streams) > 0 {
		return nil, false, true
	}
	if sc.closed || sc.goingAway {
		return nil, false, false
	}
	// Frames not yet out (a client that does not read its response):
	// wait more.
	if !sc.out.drained() {
		return nil, false, true
	}
	// Under the lock throughout: a shutdown (wakeUp) must find the
	// connection either parked with its ticket or not parked at all, and
	// a wake-up (Wake) waits for the lock, so the buffers are gone
	// before a resumed reader makes new ones.
	t, ok := sc.park.set.Park(sc.park.rc, sc)
	if !ok {
		return nil, false, false
	}
	sc.park.parked, sc.park.ticket = true, t
	sc.park.count++
	sc.srv.parked.Add(1)
	retire, sc.idle = sc.idle, nil
	sc.out.sleep()
	// The reader's own buffers: nothing is in them (a frame boundary,
	// no header block open). The Framer's read buffer goes with it.
	*sc.br = bufio.Reader{}
	sc.fr, sc.payload, sc.headBuf = nil, nil, nil
	sc.rb.fields, sc.rb.cookie = nil, nil
	return retire, true, false
}

// Wake implements idlewait.Waker: the socket is readable, in a goroutine
// of its own.
func (sc *serverConn) Wake() {
	sc.mu.Lock()
	sc.park.parked = false
	sc.srv.parked.Add(-1)
	sc.mu.Unlock()
	sc.resume()
}

// wakeUp takes a parked connection back (a shutdown or the idle timeout
// needs its reader to end it); called with sc.mu held.
func (sc *serverConn) wakeUp() {
	if sc.park.parked && sc.park.set.Unpark(sc.park.ticket) {
		sc.park.parked = false
		sc.srv.parked.Add(-1)
		go sc.resume()
	}
}

// resume runs the reader of a connection that was parked.
func (sc *serverConn) resume() {
	sc.out.awake()
	sc.br.Reset(sc.park.rd)
	sc.fr = newFramer(sc.br)
	if !sc.run() {
		sc.cleanup()
	}
}

func newFramer(br *bufio.Reader) *http2.Framer {
	fr := http2.NewFramer(nil, br)
	fr.SetReuseFrames()
	fr.SetMaxReadFrameSize(maxFrameSize)
	return fr
}
