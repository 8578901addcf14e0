//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package backend

import (
	"net"
	"syscall"

	"lbd/internal/sockio"
)

// peeker asks the kernel, without blocking and without consuming anything,
// whether an idle connection has pending data or EOF. Either means the
// backend closed it (or sent an unsolicited 408) while it sat in the pool,
// so reusing it would fail the next request. One recvfrom(MSG_PEEK) costs
// far less than a failed non-idempotent request.
type peeker struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) // p.do, bound once at dial: no per-call closure
	buf [1]byte
	err error
}

func (p *peeker) init(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	p.rc = rc
	p.fn = p.do
}

// do peeks through RawConn.Control, not Read: the answer is wanted at
// once, without the poller, and whatever read deadline the conn's last
// exchange left behind (long past for a conn idle this long) must not
// make a healthy conn look broken.
func (p *peeker) do(fd uintptr) {
	_, p.err = sockio.Peek(fd, p.buf[:])
}

// idleOK reports whether the idle conn still looks usable. Only "would
// block" means healthy; data, EOF (nil error, 0 bytes) and errors do not.
// Conns without a raw socket (net.Pipe in tests) are trusted.
func (p *peeker) idleOK() bool {
	if p.rc == nil {
		return true
	}
	if err := p.rc.Control(p.fn); err != nil {
		return false
	}
	return p.err == syscall.EAGAIN || p.err == syscall.EWOULDBLOCK
}
