package engine

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"lbd/config"
)

// Inherited is the set of listening sockets the process was given
// instead of binding them itself: by systemd (socket activation) or by
// the lbd it replaces (binary upgrade). The engine takes one for each
// listener that matches, and binds the others as usual.
//
// A listener takes, in this order: the socket handed over under its own
// bind identity (upgrade), the one socket whose name is the listener's
// name (systemd's FileDescriptorName=), or the socket bound to the
// listener's address (a systemd socket without a matching name).
type Inherited struct {
	mu    sync.Mutex
	socks []*inheritedSocket
}

type inheritedSocket struct {
	ln     net.Listener
	name   string // systemd's FileDescriptorName, or the listener's name
	key    string // bind identity (handoff), "" from systemd
	origin string // where it came from, for messages
	taken  bool
}

// NewInherited returns an empty set.
func NewInherited() *Inherited { return &Inherited{} }

// AddFile adds a passed descriptor. It must be a listening stream
// socket (a datagram socket or a pipe is refused); f is closed, the set
// keeps its own descriptor.
func (in *Inherited) AddFile(f *os.File, name, key, origin string) error {
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return fmt.Errorf("%s: descriptor %d (%s) is not a listening stream socket: %w", origin, f.Fd(), name, err)
	}
	if ul, ok := ln.(*net.UnixListener); ok && key != "" {
		// Handed over by the lbd this one replaces: the socket file is
		// this process's to remove when it stops, as if it had bound it.
		ul.SetUnlinkOnClose(true)
	}
	in.Add(withKernelKeepAlive(ln), name, key, origin)
	return nil
}

// Add adds a listening socket.
func (in *Inherited) Add(ln net.Listener, name, key, origin string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.socks = append(in.socks, &inheritedSocket{ln: ln, name: name, key: key, origin: origin})
}

// take returns the socket for listener l, whose bind identity is key
// (bindKeys), or nil.
func (in *Inherited) take(l *config.Listener, key string) net.Listener {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if s := in.find(func(s *inheritedSocket) bool { return s.key != "" && s.key == key }); s != nil {
		return s.claim()
	}
	if l.SocketFrom != "" {
		return nil // such a socket comes from its sender, or from an upgrade by key
	}
	if l.Name != "" {
		if s := in.find(func(s *inheritedSocket) bool { return s.key == "" && s.name == l.Name }); s != nil {
			return s.claim()
		}
	}
	if s := in.find(func(s *inheritedSocket) bool { return s.key == "" && sameAddress(s.ln.Addr(), l) }); s != nil {
		return s.claim()
	}
	return nil
}

// TakeControl returns the control socket handed over for path, or nil.
func (in *Inherited) TakeControl(path string) net.Listener {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	key := ControlKey(path)
	if s := in.find(func(s *inheritedSocket) bool { return s.key == key }); s != nil {
		return s.claim()
	}
	return nil
}

// ControlKey is the identity of a control socket in a handoff: its
// absolute path.
func ControlKey(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return "control:" + filepath.Clean(abs)
	}
	return "control:" + path
}

// find returns the only untaken socket that matches, or nil when none
// or several do (several sockets of one name fall back to addresses).
func (in *Inherited) find(match func(*inheritedSocket) bool) *inheritedSocket {
	var found *inheritedSocket
	for _, s := range in.socks {
		if s.taken || !match(s) {
			continue
		}
		if found != nil {
			return nil
		}
		found = s
	}
	return found
}

func (s *inheritedSocket) claim() net.Listener {
	s.taken = true
	return s.ln
}

// Unused describes the sockets no listener took, and closes them.
func (in *Inherited) Unused() []string {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for _, s := range in.socks {
		if s.taken {
			continue
		}
		out = append(out, fmt.Sprintf("%s socket %q on %s matches no listener", s.origin, s.name, s.ln.Addr()))
		if ul, ok := s.ln.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false) // the path is the sender's
		}
		s.ln.Close()
		s.taken = true
	}
	return out
}

// sameAddress reports whether a bound socket serves listener l's
// address. The wildcard addresses of both families are one: systemd's
// ListenStream=80 binds [::]:80, which also takes IPv4 connections.
func sameAddress(a net.Addr, l *config.Listener) bool {
	switch a := a.(type) {
	case *net.UnixAddr:
		return strings.HasPrefix(l.Address, "/") && filepath.Clean(a.Name) == filepath.Clean(l.Address)
	case *net.TCPAddr:
		if strings.HasPrefix(l.Address, "/") || a.Port != l.Port {
			return false
		}
		ips, err := listenerIPs(l.Address)
		if err != nil {
			return false
		}
		for _, ip := range ips {
			if ip.Equal(a.IP) || ip.IsUnspecified() && a.IP.IsUnspecified() {
				return true
			}
		}
	}
	return false
}

// listenerIPs resolves a listener's Address; an empty one is the
// wildcard.
func listenerIPs(host string) ([]net.IP, error) {
	if host == "" || host == "*" {
		return []net.IP{net.IPv6unspecified}, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	addrs, err := net.LookupIP(host)
	if err != nil {
		return nil, err
	}
	return addrs, nil
}
