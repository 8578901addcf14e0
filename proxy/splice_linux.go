//go:build linux

package proxy

import (
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// spliceChunk is how much one splice(2) call moves at most.
const spliceChunk = 64 << 10

// spliceCopy moves bytes from src to dst through a kernel pipe with
// splice(2), so tunnelled payload never enters user space. Reads wait
// under the tunnel's idle clock (the RawConn callbacks run under the
// connections' deadlines). It returns nil when src reached EOF, else the
// error that ended the copy; handled is false, nothing having moved,
// when the connections are not plain sockets (TLS).
func spliceCopy(dst, src net.Conn, k *idleClock) (handled bool, err error) {
	sc, ok1 := src.(syscall.Conn)
	dc, ok2 := dst.(syscall.Conn)
	if !ok1 || !ok2 {
		return false, nil
	}
	rs, err1 := sc.SyscallConn()
	ws, err2 := dc.SyscallConn()
	var p [2]int
	if err1 != nil || err2 != nil || unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK) != nil {
		return false, nil
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for {
		src.SetReadDeadline(k.deadline())
		n, err := spliceOnce(rs.Read, func(fd int) (int, error) {
			n, err := unix.Splice(fd, nil, p[1], nil, spliceChunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			return int(n), err
		})
		switch {
		case err != nil && k.keepWaiting(err):
			continue
		case err != nil:
			return true, err
		case n == 0:
			return true, nil // EOF
		}
		k.touch()
		for n > 0 {
			dst.SetWriteDeadline(k.writeDeadline())
			m, err := spliceOnce(ws.Write, func(fd int) (int, error) {
				m, err := unix.Splice(p[0], nil, fd, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				return int(m), err
			})
			if err == nil && m <= 0 {
				err = io.ErrShortWrite
			}
			if err != nil {
				return true, err
			}
			n -= m
		}
	}
}

// spliceOnce runs one non-blocking splice through a RawConn Read or Write,
// which parks until the socket is ready (or its deadline passes) whenever
// the splice would block.
func spliceOnce(wait func(func(uintptr) bool) error, op func(fd int) (int, error)) (int, error) {
	var n int
	var err error
	if werr := wait(func(fd uintptr) bool {
		n, err = op(int(fd))
		return err != unix.EAGAIN
	}); werr != nil {
		return 0, werr
	}
	return n, err
}
