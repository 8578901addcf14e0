//go:build linux

package proxy

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// parkAfter is how long a raw-loop connection waits for its next request
// with its goroutine and buffers before it is parked: a variable for the
// tests.
var parkAfter = time.Second

// parker holds idle keep-alive connections without a goroutine or a read
// buffer: one epoll set (on Go's own poller) watches their sockets, and
// a request's first bytes start a goroutine that takes a pooled buffer
// and serves it. An idle connection then costs its conn structure and
// the socket, not also a goroutine stack, an 8 KiB buffer and a runtime
// timer. Only connections idle for parkAfter are parked, so a busy
// keep-alive connection never pays the two system calls it takes.
type parker struct {
	once sync.Once
	ok   bool
	epfd int
	rc   syscall.RawConn // epfd, readable when a parked socket is

	mu     sync.Mutex
	slots  []*conn // conn.raw.slot-1 -> conn, for the connection's life
	free   []int32
	events [128]syscall.EpollEvent // the loop's

	parks atomic.Int64 // connections parked so far (tests)

	// Memory hand-back (sweep's): handedAt is how many connections were
	// parked at the last hand-back, lastHand when it ran.
	handedAt int
	lastHand time.Time
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

var parking parker

// ready starts the parker on first use; false when this system cannot
// (connections then wait the ordinary way).
func (p *parker) ready() bool {
	p.once.Do(p.start)
	return p.ok
}

func (p *parker) start() {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return
	}
	// Non-blocking, so os.NewFile puts it on the runtime's poller: the
	// loop waits there, not in a thread blocked in epoll_wait.
	f := os.NewFile(uintptr(fd), "lbd idle connections")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	p.epfd, p.rc, p.ok = fd, rc, true
	go p.loop(f)
	go p.sweep()
}

// loop resumes parked connections whose sockets became readable (or
// hung up). One RawConn.Read call for ever: within it the runtime keeps
// every readiness edge of the epoll descriptor.
func (p *parker) loop(f *os.File) {
	for p.rc.Read(p.wake) == nil {
	}
	f.Close()
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
		p.mu.Lock()
		for _, ev := range p.events[:n] {
			if c := p.slots[ev.Fd]; c != nil && c.raw.parked {
				c.raw.parked = false
				go c.resume()
			}
		}
		p.mu.Unlock()
	}
}

// sweep ends parked connections idle for their listener's Client
// timeout, as the read deadline of a waiting one would: shutdown(2)
// wakes it, and its goroutine reads EOF and closes it silently.
func (p *parker) sweep() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	prev, quiet := 0, 0
	for now := range t.C {
		p.mu.Lock()
		parked := 0
		for _, c := range p.slots {
			if c == nil || !c.raw.parked {
				continue
			}
			if parked++; c.raw.swept {
				continue
			}
			if to := c.srv.state.Load().Client; to > 0 && now.Sub(c.now) >= to {
				c.raw.swept = true
				// Parked, so its goroutine (the only closer) is not
				// running and the descriptor is open; an error cannot
				// matter, the socket is being ended.
				syscall.Shutdown(c.raw.sock, syscall.SHUT_RDWR)
			}
		}
		p.mu.Unlock()
		if quiet++; parked != prev {
			quiet = 0
		}
		prev = parked
		if grown := parked - p.handedAt; quiet >= handBackQuiet && grown >= handBackMin && grown >= parked/4 && now.Sub(p.lastHand) >= handBackEvery {
			p.handedAt, p.lastHand = parked, now
			// Two collections: the first only moves what sync.Pool holds
			// (the buffers given back) to its victim cache.
			runtime.GC()
			debug.FreeOSMemory()
		}
		if parked < p.handedAt {
			p.handedAt = parked
		}
	}
}

// park hands c to the parker; false leaves it to the caller (nothing
// was registered). After true, c belongs to the goroutine resume runs in.
func (p *parker) park(c *conn) bool {
	p.mu.Lock()
	if c.raw.slot == 0 {
		var i int32
		if n := len(p.free); n > 0 {
			i, p.free = p.free[n-1], p.free[:n-1]
		} else {
			i = int32(len(p.slots))
			p.slots = append(p.slots, nil)
		}
		p.slots[i], c.raw.slot = c, i+1
	}
	op := syscall.EPOLL_CTL_MOD
	if !c.raw.armed {
		op = syscall.EPOLL_CTL_ADD
	}
	c.raw.armed, c.raw.parked, c.raw.swept = true, true, false
	c.raw.ev = syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: c.raw.slot - 1}
	sock := c.raw.sock
	p.mu.Unlock()
	// Level-triggered: bytes that came before this call wake it at once.
	if err := syscall.EpollCtl(p.epfd, op, sock, &c.raw.ev); err != nil {
		p.mu.Lock()
		c.raw.parked, c.raw.armed = false, op == syscall.EPOLL_CTL_MOD
		p.mu.Unlock()
		return false
	}
	p.parks.Add(1)
	return true
}

// drop forgets c (its socket is closing, which leaves the epoll set).
func (p *parker) drop(c *conn) {
	if c.raw.slot == 0 {
		return
	}
	p.mu.Lock()
	p.slots[c.raw.slot-1] = nil
	p.free = append(p.free, c.raw.slot-1)
	c.raw.slot = 0
	p.mu.Unlock()
}
