package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

// In RootJail the path of systemd's notification socket is out of
// reach, and User may not be allowed to reach it, so a process that
// drops its privileges opens it first and keeps it (connectNotify), and
// passes it on to the new process of an upgrade (notifyFile,
// inheritNotify): readiness, reloads and the watchdog go on working.

// notifyFDEnv names the passed socket's descriptor in the new process.
const notifyFDEnv = "LBD_NOTIFY_FD"

// connectNotify opens $NOTIFY_SOCKET for good; nothing without it.
func (n *notifier) connectNotify() error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" || n.conn != nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("systemd notification socket %s: %w", path, err)
	}
	n.conn = c
	return nil
}

// inheritNotify takes the socket an upgrading predecessor passed.
func (n *notifier) inheritNotify() error {
	v := os.Getenv(notifyFDEnv)
	if v == "" {
		return nil
	}
	os.Unsetenv(notifyFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return fmt.Errorf("%s=%q is not a descriptor", notifyFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "notify")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return fmt.Errorf("%s: %w", notifyFDEnv, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return fmt.Errorf("%s: a %T, not a UNIX socket", notifyFDEnv, c)
	}
	n.conn = uc
	return nil
}

// notifyFile returns a copy of the kept socket to pass to the new
// process of an upgrade, and the variable that tells it which
// descriptor it is (fd is its number there); nil without one.
func (n *notifier) notifyFile(fd int) (*os.File, string, error) {
	if n.conn == nil {
		return nil, "", nil
	}
	f, err := n.conn.File()
	if err != nil {
		return nil, "", fmt.Errorf("systemd notification socket: %w", err)
	}
	return f, notifyFDEnv + "=" + strconv.Itoa(fd), nil
}
