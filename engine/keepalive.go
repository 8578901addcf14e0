package engine

import (
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// kernelKeepAlive keeps the keep-alive timing of connections accepted on
// an inherited TCP socket (binary upgrade, systemd, SocketFrom) the same
// as on one lbd bound itself: the kernel's (sockio.KeepAlive). Go sets
// its own 15 s probes on every accept of a listener it did not create,
// and offers no way to turn that off for it, so the kernel's values are
// read once and set back on each such connection.
type kernelKeepAlive struct {
	*net.TCPListener
	cfg net.KeepAliveConfig
}

// withKernelKeepAlive wraps ln if it is a TCP listener and the kernel's
// values can be read; otherwise ln keeps Go's timing (a system without
// /proc/sys: there is nothing to match).
func withKernelKeepAlive(ln net.Listener) net.Listener {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return ln
	}
	cfg, err := kernelKeepAliveConfig("/proc/sys/net/ipv4")
	if err != nil {
		return ln
	}
	return kernelKeepAlive{TCPListener: tl, cfg: cfg}
}

func (l kernelKeepAlive) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	// The error cannot matter: the values are within what setsockopt
	// accepts (kernelKeepAliveConfig), and Linux sets them on a TCP
	// socket in any state, so nothing is left to refuse them.
	_ = c.SetKeepAliveConfig(l.cfg)
	return c, nil
}

// The ranges setsockopt accepts (linux/tcp.h MAX_TCP_KEEPIDLE,
// MAX_TCP_KEEPINTVL, MAX_TCP_KEEPCNT); the sysctls are not bounded so.
const (
	maxKeepIdle  = 32767
	maxKeepIntvl = 32767
	maxKeepCnt   = 127
)

// kernelKeepAliveConfig reads tcp_keepalive_time, _intvl (seconds) and
// _probes from dir, each brought within what setsockopt accepts: a
// sysctl above it gets the longest setting a socket can have, and 0
// (which Go would read as "its default") the shortest.
func kernelKeepAliveConfig(dir string) (net.KeepAliveConfig, error) {
	var v [3]int
	for i, name := range []string{"tcp_keepalive_time", "tcp_keepalive_intvl", "tcp_keepalive_probes"} {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			return net.KeepAliveConfig{}, err
		}
		if v[i], err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return net.KeepAliveConfig{}, err
		}
	}
	return net.KeepAliveConfig{
		Enable:   true,
		Idle:     time.Duration(min(max(v[0], 1), maxKeepIdle)) * time.Second,
		Interval: time.Duration(min(max(v[1], 1), maxKeepIntvl)) * time.Second,
		Count:    min(max(v[2], 1), maxKeepCnt),
	}, nil
}
