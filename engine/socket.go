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
	"lbd/listener"
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

// bind opens the listener's socket: the one inherited for it (systemd,
// or the lbd this one replaced), else TCP on Address:Port, a UNIX socket
// when Address is a path, or a socket received over SocketFrom. raw is
// the socket itself, ln what the proxy accepts on (a TLS wrapper for
// ListenHTTPS).
func bind(l *config.Listener, inh *Inherited, log *logrus.Logger) (ln, raw net.Listener, err error) {
	raw = inh.take(l)
	if raw != nil {
		log.Debugf("%s: using the inherited socket %s", l.Pos, raw.Addr())
	} else if raw, err = bindRaw(l, log); err != nil {
		return nil, nil, err
	}
	if l.HTTPS {
		return listener.NewTLS(raw, log), raw, nil
	}
	return raw, raw, nil
}

func bindRaw(l *config.Listener, log *logrus.Logger) (net.Listener, error) {
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
