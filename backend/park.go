package backend

// Park takes a connection out of the Active count while the client
// connection that used it keeps it for its next request. Per-client
// affinity lets a keep-alive client reuse "its" backend connection without
// touching the shared pool; the balancer still decides every request, the
// parked conn is only used when the pick lands on its backend. Park
// reports false, closing the conn, when the backend is disabled or dead.
func (b *Backend) Park(c *Conn) bool {
	if c == nil || c.b != b || !c.release() {
		return false
	}
	if !b.enabled.Load() || !b.alive.Load() || b.retired.Load() {
		c.Conn.Close()
		return false
	}
	c.idleSince.Store(monoNow())
	return true
}

// Unpark checks a parked connection out again, as Get does for pooled
// ones. A conn idle past the idle timeout, or closed by the backend while
// idle, is closed and false is returned.
func (b *Backend) Unpark(c *Conn) bool {
	if b.retired.Load() {
		c.Conn.Close()
		return false
	}
	idle := monoNow() - c.idleSince.Load()
	if idle > b.pool.idle || (idle > int64(peekAfter) && !c.peek.idleOK()) {
		c.Conn.Close()
		return false
	}
	c.reuses++
	c.out.Store(true)
	b.active.Add(1)
	return true
}
