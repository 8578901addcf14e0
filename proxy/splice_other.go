//go:build !linux

package proxy

import (
	"net"
	"time"
)

// spliceCopy has no zero-copy path outside Linux: the caller copies.
func spliceCopy(dst, src net.Conn, idle time.Duration) bool { return false }
