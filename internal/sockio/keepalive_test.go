package sockio

import (
	"context"
	"net"
	"syscall"
	"testing"
)

// TestListenKeepAlive: connections accepted on a listener made with
// ListenKeepAlive have SO_KEEPALIVE on although Go is told to leave
// keep-alive alone (KeepAlive -1): the kernel copied it from the listener.
// Without the Control function the same listener gives connections
// without it, so the option does not come from anywhere else.
func TestListenKeepAlive(t *testing.T) {
	cases := []struct {
		name    string
		control func(string, string, syscall.RawConn) error
		want    int
	}{
		{name: "inherited from the listener", control: ListenKeepAlive, want: 1},
		{name: "listener without it", control: nil, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lc := net.ListenConfig{KeepAlive: -1, Control: tc.control}
			ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rc, err := c.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			got, gerr := -1, error(nil)
			if err := rc.Control(func(fd uintptr) {
				got, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
			}); err != nil {
				t.Fatal(err)
			}
			if gerr != nil {
				t.Fatal(gerr)
			}
			if (got != 0) != (tc.want != 0) {
				t.Errorf("SO_KEEPALIVE on the accepted connection = %d, want %d", got, tc.want)
			}
		})
	}
}
