// Package testconn has net.Conn wrappers that tests use to put bytes on
// the wire in a chosen shape.
package testconn

import "net"

// Split is a net.Conn whose next Write, once Between is set, goes out as
// two writes of half the bytes each with Between called between them: a
// TLS record or an HTTP/2 frame split across TCP segments, the first read
// by the peer before the rest comes. Between is cleared when used.
type Split struct {
	net.Conn
	Between func()
}

func (s *Split) Write(p []byte) (int, error) {
	f := s.Between
	if f == nil || len(p) < 2 {
		return s.Conn.Write(p)
	}
	s.Between = nil
	n, err := s.Conn.Write(p[:len(p)/2])
	if err != nil {
		return n, err
	}
	f()
	m, err := s.Conn.Write(p[len(p)/2:])
	return n + m, err
}
