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

// ListenControl is a net.ListenConfig Control function for the listening
// sockets lbd binds. Linux and the BSDs copy a listener's options into
// every connection it accepts, so what is set here once costs no system
// call per accept:
//   - SO_KEEPALIVE, with the kernel's timing: with KeepAlive -1 (Go leaves
//     keep-alive alone) the connections are those KeepAlive above gives;
//   - TCP_INQ on Linux (see InheritsInq), before the socket listens, so
//     that no connection can be accepted without it. A kernel that refuses
//     it (before 4.18) leaves it off, and Inq finds out per connection.
func ListenControl(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1)
		if err == nil {
			_ = EnableInq(fd) // refused only where TCP_INQ does not exist: see above
		}
	}); cerr != nil {
		return cerr
	}
	return err
}
