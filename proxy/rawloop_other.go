//go:build !linux

package proxy

import "net"

// rawLoop needs TCP_INQ (see rawloop_linux.go); elsewhere every
// connection reads through net.Conn.
type rawLoop struct {
	inside bool
}

func (c *conn) initRaw(net.Conn) {}

func (c *conn) rawOn() bool { return false }

func (c *conn) serveRaw() (parked bool) { return false }

func (l *rawLoop) kept() rawLoop { return rawLoop{} }

// parker: connections are parked on Linux only (park_linux.go).
type parker struct{}

var parking parker

func (parker) ready() bool { return false }

func (parker) closeServer(*Server) {}

func (c *conn) parksHeld(*Listener) bool { return false }

func (c *conn) waitHeld(*Listener) (parked bool, err error) { return false, nil }

// interrupt ends the connection from another goroutine.
func (c *conn) interrupt() { c.nc.Close() }

// writeClient writes p to the client.
func (c *conn) writeClient(p []byte) error {
	_, err := c.nc.Write(p)
	return err
}
