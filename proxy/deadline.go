package proxy

import (
	"time"

	"lbd/backend"
)

// lazyDeadline moves a connection deadline only when the one in force
// would expire before three quarters of the timeout from now. Timeouts
// are coarse (Pound counts seconds) and every real update re-arms a
// runtime timer, which showed up in profiles once per read and write.
type lazyDeadline struct {
	read, write int64 // UnixNano of the deadlines in force, 0 = none
	// idle is the parking delay the last idle read deadline was set for
	// (rawloop_linux.go's waitDeadline).
	idle int64
}

func due(at *int64, now time.Time, timeout time.Duration) (time.Time, bool) {
	if timeout <= 0 {
		return time.Time{}, false
	}
	n := now.UnixNano()
	if *at-n >= int64(timeout)*3/4 {
		return time.Time{}, false
	}
	*at = n + int64(timeout)
	return time.Unix(0, *at), true
}

// forRead makes sure c's read deadline is about timeout from now.
func (d *lazyDeadline) forRead(c deadliner, now time.Time, timeout time.Duration) {
	if t, ok := due(&d.read, now, timeout); ok {
		c.SetReadDeadline(t)
	}
}

// forWrite makes sure c's write deadline is about timeout from now.
func (d *lazyDeadline) forWrite(c deadliner, now time.Time, timeout time.Duration) {
	if t, ok := due(&d.write, now, timeout); ok {
		c.SetWriteDeadline(t)
	}
}

// backendRead and backendWrite do the same for a backend connection, whose
// deadlines are recorded on the pooled conn itself.
func backendRead(bc *backend.Conn, now time.Time, timeout time.Duration) {
	if t, ok := due(&bc.ReadDeadline, now, timeout); ok {
		bc.SetReadDeadline(t)
	}
}

func backendWrite(bc *backend.Conn, now time.Time, timeout time.Duration) {
	if t, ok := due(&bc.WriteDeadline, now, timeout); ok {
		bc.SetWriteDeadline(t)
	}
}
