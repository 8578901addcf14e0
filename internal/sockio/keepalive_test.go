package sockio

import (
	"net"
	"syscall"
	"testing"
)

// TestListenControl: connections accepted on a listener made with
// ListenControl have SO_KEEPALIVE on although Go is told to leave
// keep-alive alone (KeepAlive -1): the kernel copied it from the listener.
// Without the Control function the same listener gives connections
// without it, so the option does not come from anywhere else.
func TestListenControl(t *testing.T) {
	cases := []struct {
		name    string
		control func(string, string, syscall.RawConn) error
		want    bool
	}{
		{name: "inherited from the listener", control: ListenControl, want: true},
		{name: "listener without it", control: nil, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			accepted, _ := pairWith(t, net.ListenConfig{KeepAlive: -1, Control: tc.control})
			got, gerr := 0, error(nil)
			control(t, accepted, func(fd uintptr) {
				got, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
			})
			if gerr != nil {
				t.Fatal(gerr)
			}
			if (got != 0) != tc.want {
				t.Errorf("SO_KEEPALIVE on the accepted connection = %d, want on: %v", got, tc.want)
			}
		})
	}
}
