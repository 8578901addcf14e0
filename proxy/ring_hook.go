package proxy

import "net"

// RingServe, when set, is offered every plain TCP listener before the
// goroutine-per-connection path: it returns handled=false to decline
// (io_uring refused by the kernel or a seccomp profile), and the
// listener is then served as usual. Experimental (issue 20).
var RingServe func(s *Server, ln net.Listener) (handled bool, err error)

// Closing reports whether the server stopped accepting.
func (s *Server) Closing() bool { return s.closing.Load() }

// serveRing hands ln to RingServe when set and the listener qualifies.
func (s *Server) serveRing(ln net.Listener) (bool, error) {
	if RingServe == nil {
		return false, nil
	}
	if st := s.state.Load(); st.Tunnel {
		return false, nil
	}
	if _, ok := ln.(*net.TCPListener); !ok {
		return false, nil // TLS, unix sockets, h2 hand-over: not this path
	}
	return RingServe(s, ln)
}
