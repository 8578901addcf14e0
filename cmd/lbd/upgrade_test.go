package main

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSuccessorEnv: the new process gets the handshake descriptor and
// the record of the privilege drop, and never the socket activation,
// watchdog PID, daemonization or upgrade variables of this one.
func TestSuccessorEnv(t *testing.T) {
	in := []string{"PATH=/bin", "LISTEN_FDS=2", "LISTEN_PID=7", "LISTEN_FDNAMES=a:b", "WATCHDOG_PID=7",
		"WATCHDOG_USEC=100", "NOTIFY_SOCKET=/run/n", "LBD_UPGRADE_FD=9", "LBD_DAEMONIZED=1", "X=LISTEN_FDS=1",
		"LBD_UPGRADE_EXE=/old", "LBD_UPGRADE_CONFIG=/old.cfg", "LBD_NOTIFY_FD=4", "LBD_PIDDIR_FD=5", "LBD_PIDDIR=/run", `LBD_PRIVILEGES={"uid":1}`}
	got := successorEnv(in)
	want := []string{"PATH=/bin", "WATCHDOG_USEC=100", "NOTIFY_SOCKET=/run/n", "X=LISTEN_FDS=1",
		`LBD_PRIVILEGES={"uid":1}`, "LBD_UPGRADE_FD=3", "LBD_DAEMONIZED=1"}
	if !slices.Equal(got, want) {
		t.Errorf("successorEnv:\n got %q\nwant %q", got, want)
	}
}

// TestPassSockets: descriptors sent in several messages arrive in
// order, as working sockets.
func TestPassSockets(t *testing.T) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := fileConn(os.NewFile(uintptr(pair[0]), "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := fileConn(os.NewFile(uintptr(pair[1]), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n = maxRights + 3 // two messages
	var lns []net.Listener
	var fds []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		fd, err := dupSocket(ln)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		lns, fds = append(lns, ln), append(fds, fd)
	}
	errc := make(chan error, 1)
	go func() { errc <- sendFDs(a, fds) }()
	got, err := recvFDs(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("received %d descriptors, want %d", len(got), n)
	}
	for i, fd := range got {
		ln, err := net.FileListener(os.NewFile(uintptr(fd), strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if ln.Addr().String() != lns[i].Addr().String() {
			t.Errorf("descriptor %d is %s, want %s", i, ln.Addr(), lns[i].Addr())
		}
		ln.Close()
	}
}

// TestPIDFile: written whole, removed at exit only while it names this
// process (a successor's stays).
func TestPIDFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lbd.pid")
	if err := writePIDFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("PID file %q, %v", b, err)
	}
	d := &daemon{pidFile: path}
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.removePIDFile()
	if _, err := os.Stat(path); err != nil {
		t.Fatal("a successor's PID file was removed")
	}
	if err := writePIDFile(path); err != nil {
		t.Fatal(err)
	}
	d.removePIDFile()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("own PID file left: %v", err)
	}
}
