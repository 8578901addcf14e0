package backend

// Retire marks a backend that a reload replaced or removed: its idle
// connections are closed now, and connections still in use are closed
// when their request ends instead of going back to the pool.
func (b *Backend) Retire() {
	b.retired.Store(true)
	b.CloseIdle()
	if h2 := b.HTTP2(); h2 != nil {
		h2.Close() // streams in flight finish first
	}
}

// Retired reports whether Retire was called.
func (b *Backend) Retired() bool { return b.retired.Load() }
