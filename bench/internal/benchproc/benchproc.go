//go:build linux

// Package benchproc holds what the benchmark commands do around the
// processes they measure: a free loopback port for them, waiting until
// they listen, and reading their resident memory.
package benchproc

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
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

// atExit is what a command must stop before Check ends it: os.Exit skips
// deferred calls, and a proxy it started would outlive it.
var atExit []func()

// AtExit registers f (killing a process the command started, say) to run
// when Check or Die ends the command.
func AtExit(f func()) { atExit = append(atExit, f) }

// RunAtExit runs what AtExit registered: Die does, and so does a
// command's normal end (defer it in main).
func RunAtExit() {
	for _, f := range atExit {
		f()
	}
}

// Die ends the command: what AtExit registered first, then msg after the
// command's name on standard error, and exit status 1.
func Die(msg string) {
	RunAtExit()
	fmt.Fprintf(os.Stderr, "%s: %s\n", filepath.Base(os.Args[0]), msg)
	os.Exit(1)
}

// Check ends the command (Die) when err is not nil.
func Check(err error) {
	if err != nil {
		Die(err.Error())
	}
}

// MustRSSKiB is RSSKiB, ending the command on an error.
func MustRSSKiB(pid int) int {
	v, err := RSSKiB(pid)
	Check(err)
	return v
}

// MustFreePort is FreePort, ending the command on an error.
func MustFreePort() int {
	p, err := FreePort()
	Check(err)
	return p
}
