package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/internal/sockio"
	"lbd/listener"
)

// bindKey identifies a listening socket by what the configuration says
// of it; bindKeys makes it unique.
func bindKey(l *config.Listener) string {
	if l.SocketFrom != "" {
		return "from:" + l.SocketFrom
	}
	return "addr:" + listenAddress(l)
}

// bindKeys returns the identity of each listener's socket, in order: a
// reload keeps the socket of a listener whose key is unchanged, and an
// upgrade hands each socket over under its key. Listeners that share a
// bindKey (several on one address with Port 0, each bound to a port of
// its own) are told apart by their rank among them, "#2" and on, as
// backends listed twice are.
func bindKeys(ls []*config.Listener) []string {
	keys := make([]string, len(ls))
	seen := make(map[string]int, len(ls))
	for i, l := range ls {
		k := bindKey(l)
		seen[k]++
		if n := seen[k]; n > 1 {
			k += "#" + strconv.Itoa(n)
		}
		keys[i] = k
	}
	return keys
}

func listenAddress(l *config.Listener) string {
	if strings.HasPrefix(l.Address, "/") {
		return l.Address
	}
	return net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
}

// bind opens the listener's socket: the one inherited for it under key
// (see bindKeys) or otherwise matched (systemd,
// or the lbd this one replaced), else TCP on Address:Port, a UNIX socket
// when Address is a path, or a socket received over SocketFrom. raw is
// the socket itself, ln what the proxy accepts on (a TLS wrapper for
// ListenHTTPS).
func (e *Engine) bind(l *config.Listener, key string) (ln, raw net.Listener, err error) {
	raw = e.opts.Inherit.take(l, key)
	if raw != nil {
		e.opts.Log.Debugf("%s: using the inherited socket %s", l.Pos, raw.Addr())
	} else if raw, err = bindRaw(l, e.opts.Log, e.opts.Listen); err != nil {
		return nil, nil, err
	}
	if l.HTTPS {
		return listener.NewTLS(raw, e.opts.Log.WithFields(listenerSource(l))), raw, nil
	}
	return raw, raw, nil
}

func bindRaw(l *config.Listener, log *logrus.Logger, listen func(*net.ListenConfig, string, string) (net.Listener, error)) (net.Listener, error) {
	if l.SocketFrom != "" {
		ln, err := socketFrom(l.SocketFrom)
		if err == nil {
			log.Debugf("%s: obtained address %s", l.Pos, ln.Addr())
		}
		return ln, err
	}
	addr := listenAddress(l)
	if strings.HasPrefix(addr, "/") {
		// A stale socket file from an earlier run; when it cannot be
		// removed, Listen reports why the address is taken.
		os.Remove(addr)
		return net.Listen("unix", addr)
	}
	// Keep-alive with the kernel's timing, as Pound, and TCP_INQ, set once
	// on the listening socket: accepted connections inherit them
	// (inherited sockets: kernelKeepAlive and sockio.InheritsInq).
	lc := net.ListenConfig{KeepAlive: -1, Control: sockio.ListenControl}
	// Plain TCP, as Pound and HAProxy listen, not Go's default MPTCP: an
	// MPTCP client's connection would be an MPTCP socket, which the raw
	// loop's TCP_INQ reads and splice were never tested on, and the TCP
	// options set on a listener reach accepted connections only on a TCP
	// one.
	lc.SetMultipathTCP(false)
	if listen != nil {
		return listen(&lc, "tcp", addr)
	}
	return lc.Listen(context.Background(), "tcp", addr)
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
		return withKernelKeepAlive(ln), nil
	}
	return nil, fmt.Errorf("SocketFrom %s: no descriptor received", path)
}
