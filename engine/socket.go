package engine

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"lbd/config"
)

// bindKey identifies a listening socket: a reload keeps the socket of a
// listener whose key is unchanged.
func bindKey(l *config.Listener) string {
	if l.SocketFrom != "" {
		return "from:" + l.SocketFrom
	}
	return "addr:" + listenAddress(l)
}

func listenAddress(l *config.Listener) string {
	if strings.HasPrefix(l.Address, "/") {
		return l.Address
	}
	return net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
}

// bind opens the listener's socket: TCP on Address:Port, a UNIX socket
// when Address is a path, or a socket received over SocketFrom.
func bind(l *config.Listener, log *logrus.Logger) (net.Listener, error) {
	if l.HTTPS {
		return bindTLS(l, log)
	}
	if l.SocketFrom != "" {
		ln, err := socketFrom(l.SocketFrom)
		if err == nil {
			log.Debugf("%s: obtained address %s", l.Pos, ln.Addr())
		}
		return ln, err
	}
	addr := listenAddress(l)
	if strings.HasPrefix(addr, "/") {
		os.Remove(addr)
		return net.Listen("unix", addr)
	}
	return net.Listen("tcp", addr)
}

// socketFrom receives an already bound, listening socket over the UNIX
// socket at path (SCM_RIGHTS, one data byte), as Pound 4's SocketFrom.
func socketFrom(path string) (net.Listener, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	buf := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("SocketFrom %s: %w", path, err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("SocketFrom %s: %w", path, err)
	}
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil || len(fds) == 0 {
			continue
		}
		for _, extra := range fds[1:] {
			syscall.Close(extra)
		}
		f := os.NewFile(uintptr(fds[0]), path)
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("SocketFrom %s: %w", path, err)
		}
		return ln, nil
	}
	return nil, fmt.Errorf("SocketFrom %s: no descriptor received", path)
}
