package listener

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
)

// recordHandshake is the first byte of every TLS connection: the record
// type of the ClientHello.
const recordHandshake = 0x16

// maxPlainHead bounds how much of a plain-HTTP request is read before
// answering it: enough for any sane head, never an unbounded read.
const maxPlainHead = 16 << 10

var errNoPeek = errors.New("listener: socket cannot peek")

// peekByte returns the first byte the client sent without consuming it
// (MSG_PEEK on the socket), within the deadline already set on nc. The
// TLS stack then reads the connection untouched, with no wrapper on the
// data path of every later read.
func peekByte(nc net.Conn) (byte, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, errNoPeek
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var b [1]byte
	var n int
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		return perr != syscall.EAGAIN && perr != syscall.EWOULDBLOCK
	})
	switch {
	case err != nil:
		return 0, err
	case perr != nil:
		return 0, perr
	case n == 0:
		return 0, io.EOF
	}
	return b[0], nil
}

// answerPlain answers a client that sent plain HTTP to a TLS port, as
// zproxy does (ErrNoSsl / NoSslRedirect). The request head is read
// first, within the deadline already set on c, so the client is not
// reset while still sending it.
func answerPlain(c net.Conn, reply []byte) {
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for len(buf) < maxPlainHead && !bytes.Contains(buf, []byte("\r\n\r\n")) && !bytes.Contains(buf, []byte("\n\n")) {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			break
		}
	}
	// The connection closes after it either way; a client that went
	// away has nobody to tell.
	_, _ = c.Write(reply)
}
