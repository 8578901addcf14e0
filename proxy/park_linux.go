//go:build linux

package proxy

import (
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A raw-loop connection waiting for its next request keeps its
// goroutine and buffers for parkAfter before it is parked, or for
// parkSoon while its listener has more than parkCrowd open connections
// that are not parked. A waiting connection costs some 10 KiB (stack,
// buffers, Go's objects for the socket), a parked one 16 bytes; parking
// and resuming cost about what accepting a connection does (a dozen
// system calls, ~15 allocations: bench/RESULTS.md §33). With few
// connections the memory does not matter and a client pausing for less
// than a second never pays the cycle; with many, memory does.
//
// Part of a waiting connection's memory outlives it: Go keeps for ever
// the g structure of every goroutine that ran at once (480 bytes), the
// pollDesc of every socket open at once (512 bytes with its padding, and
// a finalizer record), and the span structures and GC metadata of the
// heap they filled, some 2 KiB in all for each connection that waited at
// the peak (bench/RESULTS.md §44). A wave of clients arriving at a rate
// R has about parkCrowd + R·parkSoon of them waiting at its peak: the
// crowd is kept small, so that what a wave leaves behind is, too.
// Variables for the tests.
var (
	parkAfter = time.Second
	parkSoon  = 200 * time.Millisecond
)

const parkCrowd = 256

// parkDelay is how long a connection of s waiting for a request is kept
// before it is parked.
func (s *Server) parkDelay() time.Duration {
	if s.Active.Load()-s.parked.Load() > parkCrowd {
		return parkSoon
	}
	return parkAfter
}

// The parker holds idle keep-alive connections as bare sockets: a
// parked connection is a copy of its descriptor in the parker's epoll
// set and one row of a table indexed by that descriptor, nothing else.
// Its conn structure goes back to a pool, and Go's own objects for the
// socket (net.TCPConn, netFD, poll.FD, the runtime's pollDesc and
// timers, the addresses) go with the closed original: an idle
// connection costs the row (16 bytes) instead of some 3 KiB. When bytes
// come, the socket becomes a net.Conn again (net.FileConn) on a pooled
// conn and is served as if just accepted, but still counted as open.
//
// A client's address is read back from the socket (getpeername) then:
// lbd has no listener whose client address comes from elsewhere (a
// PROXY protocol header), which would have to be kept in the row.
//
// Only connections idle for parkAfter (or parkSoon) are parked: a busy
// keep-alive connection never pays the system calls it takes.
type parker struct {
	once sync.Once
	ok   bool
	epfd int
	file *os.File        // epfd's
	rc   syscall.RawConn // epfd, readable when a parked socket is

	// resume serves the socket of a row taken by an event or by the sweep
	// (resumeParked; tests record instead). now is the sweep's clock.
	resume func(fd int, srv *Server)
	now    func() time.Time

	mu     sync.Mutex
	rows   []parkedConn // by descriptor; srv == nil: none parked there
	n      int          // rows in use
	gen    uint32       // the last registration's
	ev     syscall.EpollEvent
	events [128]syscall.EpollEvent // the loop's

	parks atomic.Int64 // connections parked so far (tests)

	// held: the TLS connections parked whole (parkHeld), by descriptor,
	// from park until reap or resume takes them back (release).
	held map[int]heldConn

	// Memory hand-back (sweep's): handedAt is how many connections were
	// parked at the last hand-back, lastHand when it ran.
	handedAt int
	lastHand time.Time
}

// parkedConn is all that a parked connection keeps: 16 bytes.
type parkedConn struct {
	srv *Server
	// since is when the last read from the client returned, in ticks
	// (parkTick): the Client timeout counts from it, as it does for a
	// waiting connection's read deadline.
	since uint32
	// gen is the registration's, carried in its epoll events: an event
	// for an earlier socket that had the same descriptor is ignored.
	gen uint32
}

// parkTick is the unit of a row's since (1/16 s): it is rounded up when
// a connection parks and the sweep's clock down, so the Client timeout
// ends a parked connection less than two ticks late and never early. A
// uint32 of ticks wraps after 8.5 years and only differences are taken,
// signed: a Client timeout above 4 years never ends a parked connection.
const parkTick = int64(time.Second / 16)

// ticksUp and ticksDown are t (nanoseconds, non-negative) in ticks.
func ticksUp(t int64) int64   { return (t + parkTick - 1) / parkTick }
func ticksDown(t int64) int64 { return t / parkTick }

// idleTicks is how long a row has been parked at now (ticks): the
// difference of two wrapped counts, negative for the tick it parked in.
func (r *parkedConn) idleTicks(now int64) int64 {
	return int64(int32(uint32(now) - r.since))
}

// Many connections parking at once (a wave of clients going idle) leave
// their buffers and stacks as free heap that Go returns to the system
// only slowly; once the parked count has stayed the same for
// handBackQuiet sweeps the sweep hands it back, at most every
// handBackEvery, and only when the count grew by handBackMin and a
// quarter since.
const (
	handBackMin   = 1000
	handBackQuiet = 10 // a second
	handBackEvery = 30 * time.Second
)

var parking = parker{now: time.Now}

// ready starts the parker on first use; false when this system cannot
// (connections then wait the ordinary way).
func (p *parker) ready() bool {
	p.once.Do(p.start)
	return p.ok
}

func (p *parker) start() {
	if p.resume == nil {
		p.resume = resumeParked // not in parking's literal: an initialization cycle
	}
	if !p.open() {
		return
	}
	go p.sweep()
}

// open makes the epoll set and starts the loop that waits on it.
func (p *parker) open() bool {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return false
	}
	// Non-blocking, so os.NewFile puts it on the runtime's poller: the
	// loop waits there, not in a thread blocked in epoll_wait.
	f := os.NewFile(uintptr(fd), "lbd idle connections")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return false
	}
	p.epfd, p.file, p.rc, p.ok = fd, f, rc, true
	go p.loop()
	return true
}

// loop wakes parked connections whose sockets became readable (or hung
// up). One RawConn.Read call for ever: within it the runtime keeps
// every readiness edge of the epoll descriptor.
func (p *parker) loop() {
	for p.rc.Read(p.wake) == nil {
	}
	p.file.Close() // the loop's end (tests close it): an error cannot matter
}

func (p *parker) wake(fd uintptr) bool {
	for {
		n, err := syscall.EpollWait(int(fd), p.events[:], 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false // wait until the set is readable again
		}
		for _, ev := range p.events[:n] {
			if srv := p.take(int(ev.Fd), uint32(ev.Pad)); srv != nil {
				p.woken(int(ev.Fd), srv, ev.Events)
			}
		}
	}
}

// woken ends a parked connection whose peer is gone (a hang-up, an
// error, or a FIN with nothing before it) without waiting for its
// timeout, and serves any other.
func (p *parker) woken(fd int, srv *Server, events uint32) {
	gone := events&(syscall.EPOLLHUP|syscall.EPOLLERR) != 0 ||
		events&syscall.EPOLLRDHUP != 0 && pending(fd) == 0
	if gone {
		p.reap(fd, srv)
		return
	}
	go p.resume(fd, srv)
}

// pending is how many bytes wait in the socket (-1 when it cannot say,
// so that the caller reads and finds out).
func pending(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
	if err != nil {
		return -1
	}
	return n
}

// take removes the row of fd if it is registration gen's and returns
// its server (nil: none, or an earlier socket's event).
func (p *parker) take(fd int, gen uint32) *Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	if fd < 0 || fd >= len(p.rows) || p.rows[fd].srv == nil || p.rows[fd].gen != gen {
		return nil
	}
	return p.takeLocked(fd)
}

func (p *parker) takeLocked(fd int) *Server {
	srv := p.rows[fd].srv
	p.rows[fd] = parkedConn{}
	p.n--
	return srv
}

// reap closes the socket of a row taken from the table. Its descriptor
// is the socket's last one, so closing it also leaves the epoll set; a
// held connection is closed as a waiting one would be (TLS: with
// close_notify).
func (p *parker) reap(fd int, srv *Server) {
	if nc := p.release(fd).nc; nc != nil {
		// Its descriptor stays open until the Close below, and must not
		// stay in the set after it: the number is reused.
		_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, fd, nil) // it is in the set: it cannot fail
		// TLS sends close_notify first, which may wait (up to crypto/tls's
		// 5 s) for room in a socket its client does not read: not in the
		// sweep's goroutine, nor Close's. An error: nobody to tell.
		go nc.Close()
	} else {
		// Nothing can be done about an error closing a socket being ended.
		syscall.Close(fd)
	}
	srv.parkedGone()
}

// heldConn is a connection parked whole, and when its wait for a
// request began (the Client timeout runs from then, across parkings).
type heldConn struct {
	nc    net.Conn
	since time.Time
}

// release gives back the connection parked whole on fd (nc nil: fd is a
// bare socket's copy). Only the one that took fd's row calls it.
func (p *parker) release(fd int) heldConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.held[fd]
	if ok {
		delete(p.held, fd)
	}
	return h
}

// park registers fd, a copy of an idle connection's socket on srv whose
// last read returned at since, and reports whether it was: false leaves
// fd to the caller. A request already in the socket wakes it at once
// (the registration is level-triggered, one event per registration).
func (p *parker) park(fd int, srv *Server, since time.Time) bool {
	ok, closing := p.register(fd, nil, srv, since)
	if closing {
		p.reap(fd, srv)
	}
	return ok
}

// parkHeld parks a connection whole: its own descriptor goes into the
// set and stays open with nc (a TLS connection, whose keys and sequence
// numbers live in Go's objects); it is resumed with nc or closed through
// it. It reports false, nc staying with the caller, when that could not
// be done (nc closed meanwhile, or epoll refused it).
func (p *parker) parkHeld(rc syscall.RawConn, nc net.Conn, srv *Server, since time.Time) bool {
	fd, ok, closing := -1, false, false
	// Registered within Control: the descriptor cannot be closed (and
	// its number reused) before it is in the set.
	if err := rc.Control(func(s uintptr) { fd = int(s); ok, closing = p.register(fd, nc, srv, since) }); err != nil {
		return false
	}
	if closing {
		p.reap(fd, srv)
	}
	return ok
}

// register adds fd's row (and nc, for a connection held whole); closing
// says that srv began closing meanwhile and the row was taken back, for
// the caller to reap.
func (p *parker) register(fd int, nc net.Conn, srv *Server, since time.Time) (ok, closing bool) {
	p.mu.Lock()
	if fd >= len(p.rows) {
		p.rows = append(p.rows, make([]parkedConn, fd+1-len(p.rows))...)
	}
	p.gen++
	p.ev = syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd), Pad: int32(p.gen)}
	// Registered under the lock: closeServer must not close fd before
	// it is in the set.
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &p.ev); err != nil {
		p.mu.Unlock()
		return false, false
	}
	p.rows[fd] = parkedConn{srv: srv, since: uint32(ticksUp(since.UnixNano())), gen: p.gen}
	p.n++
	if nc != nil {
		if p.held == nil {
			p.held = make(map[int]heldConn)
		}
		p.held[fd] = heldConn{nc: nc, since: since}
	}
	// A Close or Shutdown that began before this row existed did not
	// see it (nor the connection, gone from srv.conns): end it now.
	closing = srv.refusing()
	if closing {
		p.takeLocked(fd)
	}
	p.mu.Unlock()
	p.parks.Add(1)
	return true, closing
}

// closeServer closes every connection of srv the parker holds
// (Server.Close, and Shutdown's closing of idle connections).
func (p *parker) closeServer(srv *Server) {
	var fds []int
	p.mu.Lock()
	for fd := range p.rows {
		if p.rows[fd].srv == srv {
			p.takeLocked(fd)
			fds = append(fds, fd)
		}
	}
	p.mu.Unlock()
	for _, fd := range fds {
		p.reap(fd, srv)
	}
}

// sweep ends parked connections idle for their listener's Client
// timeout, every 100 ms, and hands memory back after a parking wave.
func (p *parker) sweep() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	prev, quiet := 0, 0
	for range t.C {
		now := p.now()
		parked := p.expire(now)
		if quiet++; parked != prev {
			quiet = 0
		}
		prev = parked
		p.handBack(parked, quiet, now)
	}
}

// expire ends the parked connections whose Client timeout has passed at
// now, silently as the read deadline of a waiting one would, and
// returns how many stay parked. One in which a request has come by then
// (its event not yet handled) is served instead: a request is never
// dropped because the sweep met it first.
func (p *parker) expire(now time.Time) int {
	var due, serves []taken
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return 0
	}
	ticks := ticksDown(now.UnixNano())
	for fd := range p.rows {
		r := p.rows[fd]
		if r.srv == nil {
			continue
		}
		to := r.srv.state.Load().Client
		if to <= 0 || r.idleTicks(ticks) < ticksUp(int64(to)) {
			continue
		}
		p.takeLocked(fd)
		due = append(due, taken{fd, r.srv})
	}
	left := p.n
	p.mu.Unlock()
	// The rows taken are this sweep's alone: ask each socket (a system
	// call) without holding up parks and wake-ups.
	for _, t := range due {
		if pending(t.fd) == 0 {
			p.reap(t.fd, t.srv)
		} else {
			serves = append(serves, t)
		}
	}
	for _, t := range serves {
		p.woken(t.fd, t.srv, syscall.EPOLLIN)
	}
	return left
}

// taken is a row taken from the table, with its descriptor.
type taken struct {
	fd  int
	srv *Server
}

// handBack returns free memory to the system once a wave of parking has
// been quiet for a second (see handBackMin).
func (p *parker) handBack(parked, quiet int, now time.Time) {
	if grown := parked - p.handedAt; quiet >= handBackQuiet && grown >= handBackMin && grown >= parked/4 && now.Sub(p.lastHand) >= handBackEvery {
		p.handedAt, p.lastHand = parked, now
		// Two collections: the first only moves what sync.Pool holds
		// (the buffers and conn structures given back) to its victim
		// cache.
		runtime.GC()
		debug.FreeOSMemory()
	}
	if parked < p.handedAt {
		p.handedAt = parked
	}
}

// dupSocket returns a close-on-exec copy of the socket's descriptor.
func dupSocket(rc syscall.RawConn) (int, error) {
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	return fd, derr
}

// resumeParked serves a parked socket again: it leaves the parker's set,
// becomes a net.Conn on a pooled conn, and is served as an accepted
// connection is, from its first read.
func resumeParked(fd int, srv *Server) {
	if h := parking.release(fd); h.nc != nil {
		resumeHeld(fd, h, srv)
		return
	}
	// FileConn copies the descriptor and this one is closed: the socket
	// stays open, so closing would not take it out of the set. It can
	// fail only if fd is not there, and then there is nothing to remove.
	_ = syscall.EpollCtl(parking.epfd, syscall.EPOLL_CTL_DEL, fd, nil) // fails only when fd is not in the set (above)
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f)
	// Closing the copy given to FileConn: an error cannot matter.
	f.Close()
	if err != nil {
		// Out of descriptors for the copy: the connection is closed,
		// which the client sees (a reset, if a request was waiting).
		srv.parkedGone()
		return
	}
	// FileConn ignores a failed getpeername: a client that reset the
	// connection after the bytes that woke it has no address any more,
	// and nothing left to be answered. A server that is closing takes
	// no request from a parked connection, as it takes no new one.
	if nc.RemoteAddr() == nil || srv.refusing() {
		nc.Close() // a reset socket, or one being closed: nobody to tell
		srv.parkedGone()
		return
	}
	c := newConn(srv, nc)
	srv.fromParker(c)
	c.serve()
}
