//go:build linux

// Package idlewait watches the sockets of parked connections: a
// connection with nothing to do gives back its goroutines and buffers
// and registers its socket here; when the socket becomes readable (a
// request, a PING, a close_notify, a FIN) its owner is woken in a new
// goroutine. One epoll set, on the runtime's own poller, serves every
// connection; a parked one costs a 24-byte row.
//
// The proxy's HTTP/1.1 connections have their own parker (package
// proxy, park_linux.go), which also keeps their Client timeout and
// counts; this one serves owners that keep their own timers (package
// h2's connections).
package idlewait

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// A Waker is the owner of a parked socket.
type Waker interface {
	// Wake is called, in a goroutine of its own, once the socket is
	// readable or hung up; the registration is then gone.
	Wake()
}

// A Ticket names one registration, for Unpark.
type Ticket struct {
	fd  int32
	gen uint32
}

// Set is an epoll set of parked sockets.
type Set struct {
	epfd int
	file *os.File
	rc   syscall.RawConn

	mu     sync.Mutex
	rows   []row // by descriptor
	n      int   // rows in use
	gen    uint32
	events [64]syscall.EpollEvent // the loop's
}

type row struct {
	w   Waker // nil: none parked
	gen uint32
}

var (
	once   sync.Once
	shared *Set
)

// Default returns the process's set, opened on first use; nil when this
// system has none (connections then wait the ordinary way).
func Default() *Set {
	once.Do(func() { shared = Open() })
	return shared
}

// Open makes a set and starts its loop; nil when epoll is refused.
func Open() *Set {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	// Non-blocking, so os.NewFile puts it on the runtime's poller: the
	// loop waits there, not in a thread blocked in epoll_wait.
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil
	}
	f := os.NewFile(uintptr(fd), "lbd parked connections")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	s := &Set{epfd: fd, file: f, rc: rc}
	go s.loop()
	go s.handBack()
	return s
}

// Many connections parking at once leave their buffers and stacks as
// free heap that Go returns to the system only slowly. Once the parked
// count has stayed the same for a second and grew by handBackMin and a
// quarter since the last time, at most every handBackEvery, two
// collections (the first only moves what sync.Pool holds to its victim
// cache) and FreeOSMemory hand it back: the proxy's parker does the same
// for its connections.
const (
	handBackMin   = 1000
	handBackEvery = 30 * time.Second
)

func (s *Set) handBack() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	prev, quiet, handedAt, last := 0, 0, 0, time.Time{}
	for now := range t.C {
		s.mu.Lock()
		n := s.n
		s.mu.Unlock()
		if quiet++; n != prev {
			quiet = 0
		}
		prev = n
		if grown := n - handedAt; quiet >= 10 && grown >= handBackMin && grown >= n/4 && now.Sub(last) >= handBackEvery {
			handedAt, last = n, now
			runtime.GC()
			debug.FreeOSMemory()
		}
		handedAt = min(handedAt, n)
	}
}

// Close stops the loop (tests).
func (s *Set) Close() error { return s.file.Close() }

// Park registers the socket under rc for w. A socket already readable
// wakes w at once. It reports false when the socket is closed or epoll
// refused it; w is then not woken.
func (s *Set) Park(rc syscall.RawConn, w Waker) (Ticket, bool) {
	var t Ticket
	ok := false
	// Within Control: the descriptor cannot be closed and its number
	// reused while it is being registered.
	err := rc.Control(func(fd uintptr) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if int(fd) >= len(s.rows) {
			s.rows = append(s.rows, make([]row, int(fd)+1-len(s.rows))...)
		}
		s.gen++
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd), Pad: int32(s.gen)}
		if syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev) != nil {
			return
		}
		s.rows[fd] = row{w: w, gen: s.gen}
		s.n++
		t, ok = Ticket{fd: int32(fd), gen: s.gen}, true
	})
	return t, err == nil && ok
}

// Unpark takes a registration back before its wake-up: true when it was
// still there (w will not be woken for it), false when the wake-up has
// come or is on its way.
func (s *Set) Unpark(t Ticket) bool {
	return s.take(int(t.fd), t.gen) != nil
}

// take removes fd's row if it is registration gen's, and the descriptor
// from the set (it is still open: its owner closes it only once it has
// the connection back), and returns its owner.
func (s *Set) take(fd int, gen uint32) Waker {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fd < 0 || fd >= len(s.rows) || s.rows[fd].w == nil || s.rows[fd].gen != gen {
		return nil
	}
	w := s.rows[fd].w
	s.rows[fd] = row{}
	s.n--
	// One-shot only disables it: it must leave, or the socket could
	// not be parked again. It is in the set, so this cannot fail.
	_ = syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_DEL, fd, nil) // in the set: cannot fail (above)
	return w
}

// loop wakes the owners of readable sockets. One RawConn.Read call for
// ever: within it the runtime keeps every readiness edge of the set.
func (s *Set) loop() {
	for s.rc.Read(s.wake) == nil {
	}
}

func (s *Set) wake(fd uintptr) bool {
	for {
		n, err := syscall.EpollWait(int(fd), s.events[:], 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false // wait until the set is readable again
		}
		for _, ev := range s.events[:n] {
			if w := s.take(int(ev.Fd), uint32(ev.Pad)); w != nil {
				go w.Wake()
			}
		}
	}
}
