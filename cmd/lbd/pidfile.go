package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// In RootJail the PID file stays where it was written, outside the jail,
// where no path leads any more: lbd keeps its directory open (as Pound
// does to remove it at exit) and works in it through that descriptor,
// which it also passes to the new process of an upgrade in the jail.

// pidDirFDEnv and pidDirEnv name the passed directory's descriptor and
// its path in the new process of an upgrade.
const (
	pidDirFDEnv = "LBD_PIDDIR_FD"
	pidDirEnv   = "LBD_PIDDIR"
)

// pidDirFor returns the directory of the PID file at path to work in,
// or nil to use the path: the one a predecessor passed when it is that
// directory, else, for a process about to enter a jail, the directory
// opened now.
func pidDirFor(path string, jail string) (*os.File, error) {
	dir := filepath.Dir(path)
	fd, passed := os.Getenv(pidDirFDEnv), os.Getenv(pidDirEnv)
	os.Unsetenv(pidDirFDEnv)
	os.Unsetenv(pidDirEnv)
	if fd != "" {
		n, err := strconv.Atoi(fd)
		if err != nil || n < 3 {
			return nil, fmt.Errorf("%s=%q is not a descriptor", pidDirFDEnv, fd)
		}
		f := os.NewFile(uintptr(n), passed)
		if passed == dir {
			return f, nil
		}
		f.Close() // another PIDFile now: its path is what there is
	}
	if jail == "" {
		return nil, nil
	}
	n, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("PID file directory %s: %w", dir, err)
	}
	return os.NewFile(uintptr(n), dir), nil
}

// writePIDFileAt is writePIDFile in the directory dir.
func writePIDFileAt(dir *os.File, path string) error {
	name := filepath.Base(path)
	tmp := fmt.Sprintf("%s.%d.tmp", name, os.Getpid())
	fd, err := unix.Openat(int(dir.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = fmt.Fprintf(f, "%d\n", os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), name)
	}
	if err != nil {
		// Best effort: the write's or the rename's error is the one
		// to report.
		_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
	}
	return err
}

// removePIDFileAt removes the PID file in dir if it holds this pid.
func removePIDFileAt(dir *os.File, path string) error {
	name := filepath.Base(path)
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil // gone, or not ours to read: nothing to remove
	}
	f := os.NewFile(uintptr(fd), name)
	b := make([]byte, 32)
	n, _ := f.Read(b) // a short or failed read is not this pid
	f.Close()
	if strings.TrimSpace(string(b[:n])) != strconv.Itoa(os.Getpid()) {
		return nil
	}
	return unix.Unlinkat(int(dir.Fd()), name, 0)
}
