//go:build !linux

package backend

import (
	"net"
	"time"
)

// writeReader needs TCP_INQ (see writeread_linux.go); elsewhere WriteRead
// writes and reads the ordinary way.
type writeReader struct{}

func (w *writeReader) init(net.Conn) {}

func (w *writeReader) usable(*Conn) bool { return false }

func (c *Conn) writeRead(p, buf []byte, start time.Time, timeout time.Duration) (int, bool, error) {
	c.armRead(start, timeout)
	return c.writeThenRead(p, buf)
}
