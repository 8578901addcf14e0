// Package sockio reads a non-blocking TCP socket with recvmsg(2) and
// TCP_INQ, so that the read that returns data also says whether anything
// is left behind: more bytes, or the peer's FIN; writes one with
// sendto(2); and peeks into an idle one with recvfrom(2) and MSG_PEEK.
//
// That answer is what lets a caller wait for readability instead of
// reading again, with Go's edge-triggered netpoller: after a read that
// left the socket empty (no bytes, no FIN), every later arrival raises a
// new edge. A read that returns less than asked does not prove that: a
// FIN that came with the data is consumed by that read without a trace,
// and the next read returns 0 at once, with no edge to wait for.
//
// All three pass MSG_DONTWAIT, so they cannot block whatever the socket's
// mode, and are made with RawSyscall: the runtime's entersyscall and
// exitsyscall exist so that a call that blocks can hand its P to another
// thread, and a call that cannot block does not need them. Skipping them,
// with sendto in place of write(2) and its VFS path, cut lbd's CPU per
// request by 8–21 % (bench/RESULTS.md §16.7). A call on a loopback socket
// can still take tens of microseconds (the kernel does the receiver's
// work too); the P is held that long, as it is by any running code.
package sockio

import (
	"net"
	"syscall"
	"unsafe"
)

// tcpINQ is TCP_INQ, and TCP_CM_INQ the control message type, from
// linux/tcp.h (Linux 4.18).
const tcpINQ = 36

// Supported reports whether this platform has TCP_INQ.
const Supported = true

// EnableInq turns TCP_INQ on for fd. Kernels before 4.18 refuse it; the
// caller then never learns that a socket is empty (Reader.Read's inq
// stays 1) and reads before it waits, as net.Conn does.
func EnableInq(fd uintptr) error {
	return syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpINQ, 1)
}

// InheritsInq reports whether the connections ln accepts start with
// TCP_INQ on, so that Inq needs no setsockopt of its own for them: one
// system call less per accepted connection. Linux copies a TCP listener's
// options into each connection it accepts (the new socket is a clone of
// the listener's), so that is so when ln is a plain TCP listener with
// TCP_INQ on, set before it listened (ListenControl): set any later, the
// connections already queued would lack it, which is why it is only read
// here. Not for an MPTCP listener (Go's default since 1.24; one inherited
// from an older lbd): it keeps TCP_INQ to itself, and the plain TCP
// connections it accepts from ordinary clients start without it.
func InheritsInq(ln net.Listener) bool {
	sc, ok := ln.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var proto, on int
	var serr error
	err = rc.Control(func(fd uintptr) {
		if proto, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PROTOCOL); serr == nil {
			on, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpINQ)
		}
	})
	return err == nil && serr == nil && proto == syscall.IPPROTO_TCP && on == 1
}

// Inq returns the RawConn of nc with TCP_INQ turned on, for reading with
// Reader, or false when nc is not a plain TCP connection (TLS, HTTP/2
// streams, tests' pipes) or the kernel refuses TCP_INQ: then the caller
// keeps to net.Conn. inherited says nc came from a listener for which
// InheritsInq is true, so TCP_INQ is on already.
func Inq(nc net.Conn, inherited bool) (syscall.RawConn, bool) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, false
	}
	if inherited {
		return rc, true
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = EnableInq(fd) }); err != nil || serr != nil {
		return nil, false
	}
	return rc, true
}

// hdrLen is the aligned size of a cmsghdr: where a control message's
// data begins.
var hdrLen = syscall.CmsgLen(0)

// Reader is the recvmsg state of one socket. It lives with its
// connection, so that reading allocates nothing.
type Reader struct {
	msg  syscall.Msghdr
	iov  syscall.Iovec
	cmsg [32]byte // one TCP_CM_INQ message (an int) on any platform
}

// Read reads into p (len(p) > 0) from the non-blocking socket fd. It
// returns the bytes read (0 with a nil error at the end of the stream)
// and inq, what the kernel says is left in the socket after this read:
// 0 when nothing is (no bytes, no FIN), more than 0 when another read
// would return something at once, and 1 as well when it did not say
// (TCP_INQ off, or an error). EINTR is retried; EAGAIN is returned.
func (r *Reader) Read(fd uintptr, p []byte) (n, inq int, err error) {
	r.iov.Base = &p[0]
	r.iov.SetLen(len(p))
	r.msg.Iov = &r.iov
	r.msg.Iovlen = 1
	r.msg.Control = &r.cmsg[0]
	r.msg.SetControllen(len(r.cmsg))
	for {
		k, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), syscall.MSG_DONTWAIT)
		if e == syscall.EINTR {
			continue
		}
		// The connection outlives this buffer (pools hand it on).
		r.iov.Base = nil
		if e != 0 {
			return 0, 1, e
		}
		n = int(k)
		break
	}
	inq = 1
	if uint64(r.msg.Controllen) >= uint64(hdrLen+4) {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&r.cmsg[0]))
		if h.Level == syscall.IPPROTO_TCP && h.Type == tcpINQ {
			inq = int(*(*int32)(unsafe.Pointer(&r.cmsg[hdrLen])))
		}
	}
	return n, inq, nil
}

// Send writes what it can of p (len(p) > 0) to the socket fd without
// waiting, and returns how much that was; EAGAIN when nothing fitted in
// the socket's buffer. It never raises SIGPIPE (MSG_NOSIGNAL): a peer
// that left is EPIPE, as with net.Conn. EINTR is retried.
func Send(fd uintptr, p []byte) (int, error) {
	return bufCall(syscall.SYS_SENDTO, fd, p, syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL)
}

// Peek looks at what is waiting in the non-blocking socket fd without
// consuming it (recvfrom with MSG_PEEK and MSG_DONTWAIT): EAGAIN when
// nothing is, otherwise the bytes it copied into p (0 at the end of the
// stream). EINTR is retried. Like Read and Send it is a RawSyscall: no
// entersyscall, which would also wake Go's sysmon from its deep sleep
// when the process had been idle, and a woken sysmon then polls every
// 20 µs for a while on the proxy's CPU (bench/RESULTS.md §16.9).
func Peek(fd uintptr, p []byte) (int, error) {
	return bufCall(syscall.SYS_RECVFROM, fd, p, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
}

// bufCall makes trap(fd, p, len(p), flags, NULL, 0), sendto's and
// recvfrom's shape, as a RawSyscall, retrying EINTR; flags must include
// MSG_DONTWAIT, since the call holds the P.
func bufCall(trap, fd uintptr, p []byte, flags uintptr) (int, error) {
	for {
		k, _, e := syscall.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), flags, 0, 0)
		switch e {
		case 0:
			return int(k), nil
		case syscall.EINTR:
			continue
		}
		return 0, e
	}
}
