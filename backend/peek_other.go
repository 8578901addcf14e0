//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package backend

import "net"

// peeker is a no-op where MSG_PEEK|MSG_DONTWAIT is not available; the engine
// still retries idempotent requests that fail on a reused conn.
type peeker struct{}

func (p *peeker) init(net.Conn) {}

func (p *peeker) idleOK() bool { return true }
