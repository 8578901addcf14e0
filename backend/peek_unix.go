//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package backend

import (
	"net"
	"syscall"
)

// peeker asks the kernel, without blocking and without consuming anything,
// whether an idle connection has pending data or EOF. Either means the
// backend closed it (or sent an unsolicited 408) while it sat in the pool,
// so reusing it would fail the next request. One recvfrom(MSG_PEEK) costs
// far less than a failed non-idempotent request.
type peeker struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool // p.do, bound once at dial: no per-call closure
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

func (p *peeker) do(fd uintptr) bool {
	_, _, p.err = syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return true // never wait for readiness: we want the instant answer
}

// idleOK reports whether the idle conn still looks usable. Only "would
// block" means healthy; data, EOF (nil error, 0 bytes) and errors do not.
// Conns without a raw socket (net.Pipe in tests) are trusted.
func (p *peeker) idleOK() bool {
	if p.rc == nil {
		return true
	}
	if err := p.rc.Read(p.fn); err != nil {
		return false
	}
	return p.err == syscall.EAGAIN || p.err == syscall.EWOULDBLOCK
}
