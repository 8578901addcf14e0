package h2backend

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"lbd/internal/h2frame"
	"lbd/internal/sockio"
)

// The frame-level client: lbd's own HTTP/2 client connection, on x/net's
// Framer (reading) and HPACK decoder, for streams the proxy relays frame
// by frame from an HTTP/2 client (Pool.Open). Compared with x/net's
// Transport it has no per-request goroutine, no net/http request or
// header map and no writer goroutine: the goroutine that opens a stream
// or sends its data appends the frames to the connection's buffer and
// writes them, taking along whatever other streams appended meanwhile
// (one system call for many frames under load). One reader goroutine per
// connection decodes responses into their streams.
//
// Flow control: lbd grants each stream streamWindow bytes and gives them
// back only as the proxy takes the data (Stream.Read), so a slow client
// holds its own stream back, never the connection; the connection's
// window is given back on receipt, since the streams' windows already
// bound what is buffered. Request data waits for the backend's windows.

const (
	streamWindow = 256 << 10
	connWindow   = 4 << 20
	// creditStep: window is given back in steps at least this large
	// (or when a stream's buffer runs dry).
	creditStep = 16 << 10
	// initialMaxStreams is assumed until the backend's SETTINGS say.
	initialMaxStreams = 100
	// writeCap bounds the bytes queued for the backend: data writers
	// wait beyond it.
	writeCap = 256 << 10
	// maxStreamID: a connection takes no new stream past it.
	maxStreamID = 1<<31 - 1
)

// Errors of the frame-level client.
var (
	// ErrUnprocessed: the backend did not process the request (GOAWAY,
	// REFUSED_STREAM, the connection closing before it was sent); it
	// may be sent again elsewhere.
	ErrUnprocessed = errors.New("h2backend: request not processed by the backend")
	// ErrCanceled: Stream.Cancel ended the stream.
	ErrCanceled = errors.New("h2backend: stream canceled")
	// ErrBadResponse: the backend's response was malformed.
	ErrBadResponse = errors.New("h2backend: malformed response from the backend")
	errConnLost    = errors.New("h2backend: backend connection lost")
)

// conn is one frame-level connection to the backend.
type conn struct {
	pool      *Pool
	nc        net.Conn
	w         io.Writer   // nc, or its raw writes on plain TCP
	raw       *sockio.Raw // nil unless plain TCP (see sockio.Raw)
	br        *bufio.Reader
	fr        *http2.Framer
	dec       *hpack.Decoder
	maxHeader int

	// Write side (see begin, flush).
	wmu      sync.Mutex
	wroom    sync.Cond
	wbuf     []byte
	wspare   []byte
	flushing bool
	werr     error

	mu        sync.Mutex
	win       sync.Cond // send windows grew, or a stream or the conn ended
	streams   map[uint32]*Stream
	reserved  int // streams Pool.Open reserved and has not opened yet
	nextID    uint32
	peerMax   uint32 // the backend's SETTINGS_MAX_CONCURRENT_STREAMS
	peerWin   int64  // its SETTINGS_INITIAL_WINDOW_SIZE
	peerFrame int    // its SETTINGS_MAX_FRAME_SIZE
	sendWin   int64  // connection send window
	goAway    bool   // no new streams (GOAWAY either way, or Pool.Close)
	closed    bool
	closeErr  error

	// Liveness (checkAlive): frames read, and the timer's own state.
	framesRead atomic.Uint64
	alive      *time.Timer
	seen       uint64
	pinged     bool

	// Reader goroutine only.
	payload   []byte
	block     *Stream // stream of the header block being decoded (nil: dropped)
	blockID   uint32
	blockEnd  bool
	blockOpen bool // CONTINUATION expected
	connOwed  int64
}

// dialConn opens a connection and sends the preface and lbd's settings.
func (p *Pool) dialConn(ctx context.Context) (*conn, error) {
	nc, err := p.opts.Dial(ctx)
	if err != nil {
		return nil, err
	}
	c := &conn{pool: p, nc: nc, streams: map[uint32]*Stream{}, nextID: 1,
		peerMax: initialMaxStreams, peerWin: 65535, peerFrame: 16384, sendWin: 65535,
		maxHeader: p.opts.MaxHeaderBytes}
	c.wroom.L = &c.wmu
	c.win.L = &c.mu
	var rd io.Reader = nc
	c.w = nc
	if raw := sockio.NewRaw(nc); raw != nil {
		rd, c.w, c.raw = raw, raw, raw
	}
	c.br = bufio.NewReaderSize(rd, 16<<10)
	c.fr = http2.NewFramer(nil, c.br)
	c.fr.SetReuseFrames()
	c.fr.SetMaxReadFrameSize(1 << 20)
	c.dec = hpack.NewDecoder(4096, c.onField)
	c.dec.SetMaxStringLength(p.opts.MaxHeaderBytes)
	b := append(c.begin(), http2.ClientPreface...)
	b = h2frame.AppendSettings(b,
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamWindow},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 20},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(p.opts.MaxHeaderBytes)})
	c.commit(h2frame.AppendWindowUpdate(b, 0, connWindow-65535))
	if err := c.flush(); err != nil {
		nc.Close()
		return nil, err
	}
	c.alive = time.AfterFunc(livenessAfter, c.checkAlive)
	go c.readLoop()
	return c, nil
}

// Liveness: a connection that reads nothing for livenessAfter is sent a
// PING, and closed when still nothing comes within livenessTimeout (a
// backend gone without a FIN would otherwise hold its streams until
// their timeouts). Variables for the tests.
var (
	livenessAfter   = pingAfter
	livenessTimeout = pingTimeout
	errPingTimeout  = errors.New("h2backend: backend did not answer a PING")
)

// checkAlive runs on the liveness timer; only it touches seen and
// pinged, and it re-arms the timer itself.
func (c *conn) checkAlive() {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return
	}
	if n := c.framesRead.Load(); n != c.seen {
		c.seen, c.pinged = n, false
		c.alive.Reset(livenessAfter)
		return
	}
	if c.pinged {
		c.fail(errPingTimeout)
		return
	}
	c.pinged = true
	var b [17]byte
	c.control(append(h2frame.AppendFrameHeader(b[:0], 8, http2.FramePing, 0, 0), 'l', 'b', 'd', 0, 0, 0, 0, 0))
	c.alive.Reset(livenessTimeout)
}

// begin locks the write buffer for appending; commit unlocks it.
func (c *conn) begin() []byte {
	c.wmu.Lock()
	return c.wbuf
}

func (c *conn) commit(b []byte) {
	c.wbuf = b
	c.wmu.Unlock()
}

// flush writes the buffer unless another goroutine is writing already,
// which then writes what was appended meanwhile too. It reports the
// connection's write error, if any.
func (c *conn) flush() error {
	c.wmu.Lock()
	if c.flushing || c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	c.flushing = true
	// Let the goroutines ready to run append their frames first: one
	// write then carries them all (as h2's output queue does).
	c.wmu.Unlock()
	runtime.Gosched()
	c.wmu.Lock()
	for len(c.wbuf) > 0 {
		out := c.wbuf
		c.wbuf, c.wspare = c.wspare[:0], nil
		c.wmu.Unlock()
		_, err := c.w.Write(out)
		c.wmu.Lock()
		if cap(out) <= writeCap {
			c.wspare = out[:0]
		}
		c.wroom.Broadcast()
		if err != nil {
			c.werr = err
			c.wbuf = c.wbuf[:0]
			c.nc.Close() // the reader stops and fails the streams
			break
		}
	}
	c.flushing = false
	err := c.werr
	c.wmu.Unlock()
	return err
}

// waitRoom holds a data writer back while the buffer is full.
func (c *conn) waitRoom() error {
	c.wmu.Lock()
	for c.werr == nil && c.flushing && len(c.wbuf) >= writeCap {
		c.wroom.Wait()
	}
	err := c.werr
	c.wmu.Unlock()
	return err
}

// control appends a frame of the connection's own (an acknowledgement,
// a window update, a reset) and writes it.
func (c *conn) control(b []byte) {
	w := c.begin()
	c.commit(append(w, b...))
	_ = c.flush() // a write error closes the connection: the reader reports it
}

// queue appends a frame of the reader's own (an acknowledgement, a
// window update) without writing it: the reader writes once it has
// handled the frames it read (readLoop), so a burst of messages costs
// one write for their acknowledgements, not one each.
func (c *conn) queue(b []byte) {
	w := c.begin()
	c.commit(append(w, b...))
}

// flushQueued writes what the reader queued, unless another goroutine
// is writing already (it takes it along).
func (c *conn) flushQueued() {
	c.wmu.Lock()
	pending := len(c.wbuf) > 0 && !c.flushing
	c.wmu.Unlock()
	if pending {
		_ = c.flush() // a write error closes the connection: the reader reports it
	}
}

// reserve takes a stream slot for Pool.Open; called with the pool's lock.
func (c *conn) reserve() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.goAway || c.closed || c.nextID > maxStreamID ||
		len(c.streams)+c.reserved >= int(c.peerMax) {
		return false
	}
	c.reserved++
	return true
}

// usable reports whether the pool should keep the connection.
func (c *conn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.goAway && !c.closed && c.nextID <= maxStreamID
}

// open starts stream s with its header block and as much of data as
// the windows allow (sent), on a slot reserve took; end ends the
// request if all of data went.
func (c *conn) open(s *Stream, block, data []byte, end bool) (sent int, err error) {
	c.mu.Lock()
	c.reserved--
	if c.goAway || c.closed {
		c.mu.Unlock()
		return 0, ErrUnprocessed
	}
	id := c.nextID
	c.nextID += 2
	s.c, s.id, s.sendWin = c, id, c.peerWin
	c.streams[id] = s
	maxFrame := c.peerFrame
	if len(data) > 0 {
		sent = int(min(int64(len(data)), s.sendWin, c.sendWin, int64(maxFrame)))
		s.sendWin -= int64(sent)
		c.sendWin -= int64(sent)
	}
	s.localEnd = end && sent == len(data)
	// Stream ids must reach the backend in order: the HEADERS are
	// appended before the lock that chose the id is let go.
	w := c.begin()
	c.mu.Unlock()
	if len(data) == 0 {
		w = h2frame.AppendHeaders(w, id, block, end, maxFrame)
	} else {
		w = h2frame.AppendHeaders(w, id, block, false, maxFrame)
		if sent > 0 {
			w = h2frame.AppendData(w, id, data[:sent], s.localEnd)
		}
	}
	c.commit(w)
	if err := c.flush(); err != nil {
		return 0, ErrUnprocessed
	}
	return sent, nil
}

// forget removes stream s; reset sends RST_STREAM with code first.
func (c *conn) forget(s *Stream, rst bool, code http2.ErrCode) {
	c.mu.Lock()
	if c.streams[s.id] != s {
		c.mu.Unlock()
		return
	}
	delete(c.streams, s.id)
	idle := c.goAway && len(c.streams) == 0 && c.reserved == 0
	c.mu.Unlock()
	c.win.Broadcast()
	if rst {
		var b [13]byte
		c.control(h2frame.AppendRST(b[:0], s.id, code))
	}
	if idle {
		c.nc.Close()
	}
}

// shutdown takes no new streams and closes once the open ones end.
func (c *conn) shutdown() {
	c.mu.Lock()
	c.goAway = true
	idle := len(c.streams) == 0 && c.reserved == 0
	c.mu.Unlock()
	if idle {
		var b [17]byte
		c.control(h2frame.AppendGoAway(b[:0], 0, http2.ErrCodeNo))
		c.nc.Close()
	}
}

// fail ends the connection and every stream on it.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed, c.closeErr = true, err
	c.alive.Stop()
	streams := c.streams
	c.streams = map[uint32]*Stream{}
	c.mu.Unlock()
	c.win.Broadcast()
	c.nc.Close()
	c.wmu.Lock()
	if c.werr == nil {
		c.werr = net.ErrClosed
	}
	c.wroom.Broadcast()
	c.wmu.Unlock()
	for _, s := range streams {
		s.lost(err)
	}
	c.pool.forgetConn(c)
}

// readLoop reads and dispatches the backend's frames until the
// connection ends.
func (c *conn) readLoop() {
	for {
		code, err := c.readFrame()
		c.framesRead.Add(1)
		if !h2frame.WholeFrameBuffered(c.br) {
			c.flushQueued() // before the next read may wait
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				err = errConnLost
			}
			c.fail(err)
			return
		}
		if code != http2.ErrCodeNo {
			var b [17]byte
			c.control(h2frame.AppendGoAway(b[:0], 0, code))
			c.fail(http2.ConnectionError(code))
			return
		}
	}
}
