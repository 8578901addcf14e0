package h2

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"lbd/internal/h2frame"
)

// Windows lbd grants: per stream (SETTINGS_INITIAL_WINDOW_SIZE) and for
// the connection. They bound the request body buffered per connection.
const (
	streamRecvWindow = 256 << 10
	connRecvWindow   = 1 << 20
	defaultWindow    = 65535 // RFC 9113 §6.9.2, until the client says otherwise
	maxWindow        = 1<<31 - 1
	prefaceTimeout   = 10 * time.Second
	maxFrameSize     = 16384 // SETTINGS_MAX_FRAME_SIZE lbd keeps (the default)
	// maxBlockFrames bounds the frames of one header block, against
	// CONTINUATION floods of empty frames.
	maxBlockFrames = 128
)

var errDeadline = os.ErrDeadlineExceeded

// Kinds of header block being decoded.
const (
	blockRequest uint8 = iota
	blockTrailer
	blockIgnore // for a stream already closed: decoded to keep HPACK in step
)

// serverConn is one HTTP/2 connection. Its goroutine (serve) reads and
// dispatches frames; the proxy's goroutines, one per vconn, write their
// responses through the output queue.
type serverConn struct {
	srv           *Server
	nc            net.Conn
	remote, local net.Addr
	ssl           []byte
	out           *outQueue
	br            *bufio.Reader
	fr            *http2.Framer
	dec           *hpack.Decoder

	// Reader goroutine only.
	rb        reqBuilder
	headBuf   []byte
	blockID   uint32 // stream of the header block being read
	blockEnd  bool   // its HEADERS frame had END_STREAM
	blockKind uint8
	blockBad  bool   // the HEADERS frame was invalid for its stream alone
	blockOpen bool   // CONTINUATION frames of the block are to come
	payload   []byte // HEADERS and CONTINUATION payloads
	blockSize int    // bytes and frames of the block so far
	blockN    int
	flushes   []Flusher     // what request data passed to sinks since the last flush needs
	maxSeen   atomic.Uint32 // highest client stream id; read by Shutdown
	resets    int           // streams the client reset
	answered  atomic.Int64  // streams the proxy answered in full

	maxFrame   atomic.Int32 // the client's SETTINGS_MAX_FRAME_SIZE
	connCredit atomic.Int64 // connection window owed to the client
	connRecv   atomic.Int64 // connection receive window left

	mu           sync.Mutex
	streams      map[uint32]*vconn
	idle         []*vconn
	sendWin      int64        // connection send window
	initWin      int64        // the client's SETTINGS_INITIAL_WINDOW_SIZE
	resetIDs     *[256]uint32 // streams lbd reset lately; nil until the first (1 KiB an idle connection need not keep)
	resetPos     int
	vconns       int // vconns the proxy holds (idle or busy), for MaxStreams
	settingsSent bool
	goingAway    bool
	goAwayID     uint32
	closed       bool
	lastActive   time.Time
	idleTimer    *time.Timer

	park parking // park.go
}

func newServerConn(s *Server, c net.Conn) *serverConn {
	sc := &serverConn{srv: s, nc: c, remote: c.RemoteAddr(), local: c.LocalAddr(),
		streams: map[uint32]*vconn{}, sendWin: defaultWindow, initWin: defaultWindow, lastActive: time.Now()}
	if ti, ok := c.(interface{ SSLHeaders() []byte }); ok {
		sc.ssl = ti.SSLHeaders()
	}
	rd, w := socketIO(c)
	rd = sc.initParking(c, rd)
	sc.out = newOutQueue(c, w, s.opts.IdleTimeout)
	sc.br = bufio.NewReaderSize(rd, 4<<10) // TLS keeps a record buffer of its own
	sc.fr = newFramer(sc.br)
	sc.dec = hpack.NewDecoder(4096, sc.onField)
	sc.dec.SetMaxStringLength(s.opts.MaxHeaderBytes)
	sc.rb.maxSize = s.opts.MaxHeaderBytes
	sc.maxFrame.Store(16384)
	sc.connRecv.Store(defaultWindow)
	return sc
}

// serve runs the connection until it ends or is parked (park.go).
func (sc *serverConn) serve() {
	if !sc.start() || !sc.run() {
		sc.cleanup()
	}
}

// start reads the client preface (RFC 9113 §3.4) and sends lbd's
// settings; the client's first frame must be SETTINGS.
func (sc *serverConn) start() bool {
	sc.nc.SetReadDeadline(time.Now().Add(prefaceTimeout))
	var preface [len(http2.ClientPreface)]byte
	if _, err := io.ReadFull(sc.br, preface[:]); err != nil || string(preface[:]) != http2.ClientPreface {
		return false
	}
	sc.connRecv.Store(connRecvWindow)
	if !sc.sendSettings() {
		return false
	}
	f, err := sc.fr.ReadFrame()
	if sf, ok := f.(*http2.SettingsFrame); err != nil || !ok || sf.IsAck() {
		sc.goAway(http2.ErrCodeProtocol)
		return false
	} else if code := sc.onSettings(sf); code != http2.ErrCodeNo {
		sc.goAway(code)
		return false
	}
	sc.nc.SetReadDeadline(time.Time{})
	sc.mu.Lock()
	if sc.srv.opts.IdleTimeout > 0 {
		sc.idleTimer = time.AfterFunc(sc.srv.opts.IdleTimeout/4, sc.checkIdle)
	}
	sc.mu.Unlock()
	return true
}

// sendSettings sends lbd's SETTINGS, which must be its first frame
// (§3.4): a GOAWAY asked for before is sent right after them.
func (sc *serverConn) sendSettings() bool {
	sc.mu.Lock()
	b, err := sc.out.begin(true)
	if err != nil {
		sc.mu.Unlock()
		return false
	}
	b = h2frame.AppendSettings(b,
		http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: sc.srv.opts.MaxStreams},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamRecvWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: uint32(sc.srv.opts.MaxHeaderBytes)})
	sc.out.end(h2frame.AppendWindowUpdate(b, 0, connRecvWindow-defaultWindow))
	sc.settingsSent = true
	early := sc.goingAway
	sc.mu.Unlock()
	if early {
		sc.shutdown()
	}
	return true
}

// readError handles a frame the Framer refused; false ends the
// connection.
func (sc *serverConn) readError(err error) bool {
	var se http2.StreamError
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &se) && se.StreamID > sc.maxSeen.Load():
		sc.goAway(http2.ErrCodeProtocol) // no RST_STREAM on an idle stream (§6.4)
	case errors.As(err, &se):
		sc.resetStream(se.StreamID, se.Code)
		return true
	case errors.As(err, &ce):
		sc.goAway(http2.ErrCode(ce))
	case errors.Is(err, http2.ErrFrameTooLarge):
		sc.goAway(http2.ErrCodeFrameSize)
	}
	return false
}

// handle dispatches one frame. A non-zero code is a connection error;
// stop ends the connection without one.
func (sc *serverConn) handle(f http2.Frame) (code http2.ErrCode, stop bool) {
	switch f := f.(type) {
	case *http2.DataFrame:
		return sc.onData(f), false
	case *http2.RSTStreamFrame:
		return sc.onReset(f.StreamID), false
	case *http2.WindowUpdateFrame:
		return sc.onWindowUpdate(f.StreamID, f.Increment), false
	case *http2.SettingsFrame:
		if f.IsAck() {
			return 0, false
		}
		return sc.onSettings(f), false
	case *http2.PingFrame:
		if !f.IsAck() {
			b, err := sc.out.begin(true)
			if err != nil {
				return 0, true
			}
			sc.out.end(h2frame.AppendPingAck(b, f.Data))
		}
	case *http2.GoAwayFrame:
		return 0, sc.clientGoAway()
	case *http2.PushPromiseFrame:
		return http2.ErrCodeProtocol, false // clients never push (§8.4)
	case *http2.PriorityFrame:
		switch {
		case f.StreamDep != f.StreamID:
		case f.StreamID > sc.maxSeen.Load():
			return http2.ErrCodeProtocol, false // no RST_STREAM on an idle stream (§6.4)
		default:
			sc.resetStream(f.StreamID, http2.ErrCodeProtocol) // §5.3.1
		}
	}
	return 0, false // PRIORITY and unknown frame types are ignored (§5.5)
}

// onSettings applies the client's settings and acknowledges them.
func (sc *serverConn) onSettings(f *http2.SettingsFrame) http2.ErrCode {
	if err := f.ForeachSetting(func(s http2.Setting) error { return s.Valid() }); err != nil {
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			return http2.ErrCode(ce)
		}
		return http2.ErrCodeProtocol
	}
	code := http2.ErrCodeNo
	// ForeachSetting fails only with the callback's error, always nil.
	_ = f.ForeachSetting(func(s http2.Setting) error {
		switch s.ID {
		case http2.SettingMaxFrameSize:
			sc.maxFrame.Store(int32(s.Val))
		case http2.SettingInitialWindowSize:
			if !sc.setInitialWindow(int64(s.Val)) {
				code = http2.ErrCodeFlowControl
			}
		case http2.SettingHeaderTableSize:
			sc.out.mu.Lock()
			sc.out.tableUpdate = true
			sc.out.mu.Unlock()
		}
		return nil
	})
	if code != http2.ErrCodeNo {
		return code
	}
	b, err := sc.out.begin(true)
	if err == nil {
		sc.out.end(h2frame.AppendSettingsAck(b))
	}
	return 0
}

// clientGoAway: the client will open no more streams; the connection
// ends once the open ones are answered.
func (sc *serverConn) clientGoAway() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.goingAway {
		sc.goingAway, sc.goAwayID = true, sc.maxSeen.Load()
	}
	return len(sc.streams) == 0
}

// goAway sends GOAWAY with the last stream lbd took (once SETTINGS are
// out: before that, sendSettings sends it).
func (sc *serverConn) goAway(code http2.ErrCode) {
	last := sc.maxSeen.Load()
	sc.mu.Lock()
	if sc.goingAway && sc.goAwayID < last {
		last = sc.goAwayID
	}
	sc.goingAway, sc.goAwayID = true, last
	early := !sc.settingsSent
	sc.mu.Unlock()
	if early {
		return
	}
	if b, err := sc.out.begin(true); err == nil {
		sc.out.end(h2frame.AppendGoAway(b, last, code))
	}
}

// shutdown starts a graceful stop: GOAWAY now, close once the streams
// already started are answered.
func (sc *serverConn) shutdown() {
	sc.goAway(http2.ErrCodeNo)
	sc.mu.Lock()
	sc.wakeUp() // parked: its reader must see the close, and clean up
	idle := len(sc.streams) == 0 && !sc.closed
	sc.mu.Unlock()
	if idle {
		go sc.out.close() // the reader sees the connection close and cleans up
	}
}

// checkIdle closes a connection without streams after IdleTimeout.
// It looks every quarter of it, and from the first quarter of idleness
// on lets the proxy drop the connection's idle vconns (their goroutines
// and buffers); streams that come later get fresh ones.
func (sc *serverConn) checkIdle() {
	timeout := sc.srv.opts.IdleTimeout
	sc.mu.Lock()
	if sc.closed {
		sc.mu.Unlock()
		return
	}
	idleFor := time.Since(sc.lastActive)
	if len(sc.streams) > 0 || idleFor < timeout {
		var retire []*vconn
		if len(sc.streams) == 0 && idleFor >= timeout/4 {
			retire, sc.idle = sc.idle, nil
		}
		sc.idleTimer.Reset(timeout / 4)
		sc.mu.Unlock()
		for _, v := range retire {
			v.retire()
		}
		return
	}
	sc.mu.Unlock()
	sc.shutdown()
}

// cleanup ends every stream and vconn when the reader stops.
func (sc *serverConn) cleanup() {
	sc.mu.Lock()
	sc.closed = true
	all := sc.idle
	for _, v := range sc.streams {
		all = append(all, v)
	}
	sc.idle, sc.streams = nil, nil
	if sc.idleTimer != nil {
		sc.idleTimer.Stop()
	}
	sc.mu.Unlock()
	sc.out.close()
	for _, v := range all {
		v.shutdown()
	}
	sc.srv.forget(sc)
}

// rst queues RST_STREAM and remembers the stream among those whose late
// frames are expected and ignored (§5.1, "closed").
func (sc *serverConn) rst(id uint32, code http2.ErrCode) {
	sc.noteReset(id)
	if b, err := sc.out.begin(true); err == nil {
		sc.out.end(h2frame.AppendRST(b, id, code))
	}
}

// resetStream resets a stream lbd refuses, and drops the proxy's
// exchange for it if there is one.
func (sc *serverConn) resetStream(id uint32, code http2.ErrCode) {
	v := sc.lookup(id)
	if v != nil {
		v.cur.CompareAndSwap(id, 0) // before the RST: no frame of the proxy's follows it
	}
	sc.rst(id, code)
	if v != nil {
		v.kill(id, errStreamGone)
		sc.resets++ // lbd's own resets count too ("MadeYouReset", CVE-2025-8671)
	}
}

func (sc *serverConn) noteReset(id uint32) {
	sc.mu.Lock()
	if sc.resetIDs == nil {
		sc.resetIDs = new([256]uint32)
	}
	sc.resetIDs[sc.resetPos%len(sc.resetIDs)] = id
	sc.resetPos++
	sc.mu.Unlock()
}

// resetByUs reports whether lbd reset stream id lately.
func (sc *serverConn) resetByUs(id uint32) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.resetIDs == nil {
		return false
	}
	for _, r := range sc.resetIDs {
		if r == id {
			return true
		}
	}
	return false
}

func (sc *serverConn) lookup(id uint32) *vconn {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.streams[id]
}

// streamDone forgets stream id; v goes back to the idle list if reuse.
// owed is request body that was never taken, whose window comes back.
func (sc *serverConn) streamDone(v *vconn, id uint32, reuse bool, owed int64) {
	if owed > 0 {
		sc.giveCredit(0, 0, owed)
	}
	sc.mu.Lock()
	if sc.streams[id] == v {
		delete(sc.streams, id)
	}
	if reuse && !sc.closed {
		sc.idle = append(sc.idle, v)
	}
	closeNow := sc.goingAway && len(sc.streams) == 0 && !sc.closed
	if len(sc.streams) == 0 {
		sc.lastActive = time.Now()
	}
	sc.mu.Unlock()
	if closeNow {
		go sc.out.close()
	}
}

// answer sends a complete bodiless response lbd makes itself; open says
// the client is still sending the request, which is then stopped. With
// a vconn, the answer is only sent while the stream is still its own.
func (sc *serverConn) answer(v *vconn, id uint32, status int, open bool) error {
	var scratch [32]byte
	block := appendField(appendStatus(append(scratch[:0], tableSizeZero), status), []byte("content-length"), []byte("0"))
	if open {
		sc.noteReset(id)
	}
	b, err := sc.out.begin(true)
	if err != nil {
		return err
	}
	if v != nil && v.cur.Load() != id {
		sc.out.end(b)
		return errStreamGone
	}
	b = sc.out.headers(b, id, block, true, int(sc.maxFrame.Load()))
	if open {
		b = h2frame.AppendRST(b, id, http2.ErrCodeNo)
	}
	sc.out.end(b)
	return nil
}

// interim sends "100 Continue" for a request that expects it.
func (sc *serverConn) interim(id uint32) {
	var scratch [8]byte
	block := appendStatus(append(scratch[:0], tableSizeZero), 100)
	if b, err := sc.out.begin(true); err == nil {
		sc.out.end(sc.out.headers(b, id, block, false, int(sc.maxFrame.Load())))
	}
}

// vconnClosed forgets a vconn the proxy closed: it no longer counts
// against MaxStreams and leaves the idle list.
func (sc *serverConn) vconnClosed(v *vconn) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.vconns--
	for i, w := range sc.idle {
		if w == v {
			sc.idle = append(sc.idle[:i], sc.idle[i+1:]...)
			return
		}
	}
}
