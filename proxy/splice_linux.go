//go:build linux

package proxy

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// spliceChunk is how much one splice(2) call moves at most.
const spliceChunk = 64 << 10

// spliceCopy moves bytes from src to dst through a kernel pipe with
// splice(2), so tunnelled (WebSocket) payload never enters user space.
// Every read waits at most idle, like the copying path: the RawConn
// callbacks run under the connections' deadlines. It reports false, having
// moved nothing, when the connections are not plain sockets (TLS).
func spliceCopy(dst, src net.Conn, idle time.Duration) bool {
	sc, ok1 := src.(syscall.Conn)
	dc, ok2 := dst.(syscall.Conn)
	if !ok1 || !ok2 {
		return false
	}
	rs, err1 := sc.SyscallConn()
	ws, err2 := dc.SyscallConn()
	var p [2]int
	if err1 != nil || err2 != nil || unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK) != nil {
		return false
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for {
		src.SetReadDeadline(time.Now().Add(idle))
		n, err := spliceOnce(rs.Read, func(fd int) (int, error) {
			n, err := unix.Splice(fd, nil, p[1], nil, spliceChunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			return int(n), err
		})
		if err != nil || n <= 0 {
			return true // EOF, idle timeout or error: the tunnel ends
		}
		for n > 0 {
			dst.SetWriteDeadline(time.Now().Add(idle))
			m, err := spliceOnce(ws.Write, func(fd int) (int, error) {
				m, err := unix.Splice(p[0], nil, fd, nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				return int(m), err
			})
			if err != nil || m <= 0 {
				return true
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
