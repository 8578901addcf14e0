//go:build unix

package adminapi

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Errors of Listen, for callers that want to tell them apart.
var (
	// ErrSocketInUse: another process accepts connections on the path.
	ErrSocketInUse = errors.New("control socket is in use by another process")
	// ErrNotSocket: the path exists and is not a socket; it is left alone.
	ErrNotSocket = errors.New("path exists and is not a socket")
)

// umaskMu serialises Listen calls: the umask is process-wide.
var umaskMu sync.Mutex

// Listen creates the control socket at path (http-strictness.md §A5):
//
//   - an existing non-socket file is never replaced (ErrNotSocket);
//   - an existing socket that accepts a connection belongs to a live
//     process (ErrSocketInUse); one that refuses is stale and is removed;
//   - the socket is created with umask 0177, so it is never reachable by
//     others, even briefly, then chmod-ed to mode (0 means 0600, Pound's
//     default).
//
// Closing the returned listener removes the socket file. Ownership
// (Pound's ChangeOwner) is left to the caller: os.Chown(path, uid, gid).
func Listen(path string, mode os.FileMode) (net.Listener, error) {
	if mode == 0 {
		mode = 0o600
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	umaskMu.Lock()
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, mode.Perm()); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, nil
}

// clearStale removes a dead socket left at path by a crashed process.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("control socket %s: %w", path, ErrNotSocket)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("control socket %s: %w", path, ErrSocketInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("control socket %s: removing stale socket: %w", path, err)
	}
	return nil
}
