package backend

import "sync/atomic"

// LoadWatcher is told when a backend's load changes: a connection opened
// or closed, a connect started or ended, a response time recorded. The
// least-connections family of balancers keeps a tournament tree current
// with it, so that a pick among hundreds of backends is O(1).
type LoadWatcher interface {
	LoadChanged()
}

type watchBox struct {
	w     LoadWatcher
	owner any
}

// Watch makes w the backend's load watcher on behalf of owner (a
// balancer), replacing any other.
func (b *Backend) Watch(w LoadWatcher, owner any) {
	b.watch.Store(&watchBox{w: w, owner: owner})
}

// Unwatch removes the watcher if owner still holds it: a balancer being
// replaced on reload must not detach its successor's watcher.
func (b *Backend) Unwatch(owner any) {
	for {
		cur := b.watch.Load()
		if cur == nil || cur.owner != owner || b.watch.CompareAndSwap(cur, nil) {
			return
		}
	}
}

// loadChanged tells the watcher, if any.
func (b *Backend) loadChanged() {
	if box := b.watch.Load(); box != nil {
		box.w.LoadChanged()
	}
}

// watchField is embedded in Backend.
type watchField struct {
	watch atomic.Pointer[watchBox]
}
