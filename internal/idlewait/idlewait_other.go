//go:build !linux

// Package idlewait watches the sockets of parked connections (Linux
// only: elsewhere Default is nil and connections wait the ordinary way).
package idlewait

import "syscall"

// A Waker is the owner of a parked socket.
type Waker interface{ Wake() }

// A Ticket names one registration.
type Ticket struct{}

// Set is a set of parked sockets; there is none here.
type Set struct{}

// Default returns nil: nothing is parked on this system.
func Default() *Set { return nil }

// Park refuses.
func (s *Set) Park(syscall.RawConn, Waker) (Ticket, bool) { return Ticket{}, false }

// Unpark finds nothing.
func (s *Set) Unpark(Ticket) bool { return false }
