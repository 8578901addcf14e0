package sockio

import (
	"net"
	"syscall"
)

// KeepAlive turns TCP keep-alive probes on with the kernel's own timing
// (net.ipv4.tcp_keepalive_*), which is what Pound does for client and
// backend sockets. Go's default would set 15 s probes instead, with three
// more setsockopt calls per connection.
var KeepAlive = net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}

// ListenKeepAlive is a net.ListenConfig Control function that turns
// SO_KEEPALIVE on for the listening socket. Linux and the BSDs copy it to
// every connection the socket accepts, with the kernel's timing, so a
// listener made with it and KeepAlive -1 (Go leaves keep-alive alone)
// gives the same connections as KeepAlive above for one system call less
// per accept.
func ListenKeepAlive(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1)
	}); cerr != nil {
		return cerr
	}
	return err
}
