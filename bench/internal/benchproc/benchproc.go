//go:build linux

// Package benchproc holds what the benchmark commands do around the
// processes they measure: a free loopback port for them, waiting until
// they listen, and reading their resident memory.
package benchproc

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// FreePort returns a loopback TCP port nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitListen waits until addr accepts a TCP connection, for at most
// timeout.
func WaitListen(addr string, timeout time.Duration) error {
	for end := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s did not accept within %v: %w", addr, timeout, err)
		}
	}
}

// RSSKiB is the process's resident set size (VmRSS) in KiB.
func RSSKiB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "VmRSS:" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
