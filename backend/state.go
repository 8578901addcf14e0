package backend

import "sync"

// Hook is a callback run after a backend's flips and weight changes
// (AddHook); its pointer is its identity, so one Hook can be registered
// with every backend of a balancer and removed again without a remover
// kept for each (issue 36: 10,000 balancers of two backends).
type Hook struct{ fn func() }

// NewHook returns a Hook that runs fn.
func NewHook(fn func()) *Hook { return &Hook{fn: fn} }

// hookMu serialises hook registrations, of every backend: they happen
// when balancers are built and closed, never on a flip or a request.
var hookMu sync.Mutex

// Enabled reports the administrative state (API enable/disable).
func (b *Backend) Enabled() bool { return b.enabled.Load() }

// Alive reports the operational state (health probes, dial failures).
func (b *Backend) Alive() bool { return b.alive.Load() }

// Available reports whether a new request may be sent here now: enabled,
// alive and not over ConnLimit. zproxy's rule is kept exactly: over when
// limit > 0 && limit < pending+established, so limit+1 concurrent connects
// still pass (the check and the connect are not atomic there either).
func (b *Backend) Available() bool {
	if !b.enabled.Load() || !b.alive.Load() {
		return false
	}
	limit := b.connLimit.Load()
	return limit == 0 || limit >= int64(b.pending.Load())+int64(b.active.Load())
}

// SetPriority changes the Priority (the control API) and reports whether
// it changed. Balancers are told, as of a flip, and republish their
// snapshot with the new value.
func (b *Backend) SetPriority(n int) bool {
	if b.priority.Swap(int64(n)) == int64(n) {
		return false
	}
	b.notify()
	return true
}

// SetWeight changes the zproxy weight (values below 1 become 1, as in
// New) and reports whether it changed; balancers are told.
func (b *Backend) SetWeight(n int) bool {
	n = max(n, 1)
	if b.weight.Swap(int64(n)) == int64(n) {
		return false
	}
	b.notify()
	return true
}

// SetConnLimit changes the connection limit (0 = none; negative values
// become 0) and reports whether it changed. Balancers check the limit at
// every pick, so nothing is republished: the next pick sees it.
func (b *Backend) SetConnLimit(n int) bool {
	n = max(n, 0)
	return b.connLimit.Swap(int64(n)) != int64(n)
}

// SetEnabled flips the administrative state and reports whether it changed.
// Disabling drops idle pooled connections and resets the connect-time
// average (zproxy shows 0 for a disabled backend).
func (b *Backend) SetEnabled(on bool) bool {
	if !b.enabled.CompareAndSwap(!on, on) {
		return false
	}
	if !on {
		b.CloseIdle()
		b.connectTime.Store(-1)
	}
	b.notify()
	return true
}

// SetAlive flips the operational state and reports whether it changed. The
// transition is logged once, in Pound's words: "Backend ADDR dead (reason)"
// and "Backend ADDR resurrected". A dead backend's idle conns are dropped.
func (b *Backend) SetAlive(on bool, reason string) bool {
	if !b.alive.CompareAndSwap(!on, on) {
		return false
	}
	if on {
		b.log.Infof("Backend %s resurrected", b.address)
	} else {
		b.log.Warnf("Backend %s dead (%s)", b.address, reason)
		b.CloseIdle()
	}
	b.notify()
	return true
}

// OnChange registers fn to run synchronously after every enabled or alive
// flip and every Priority or Weight change, so balancers can republish
// their eligible set. It returns a function that unregisters fn.
func (b *Backend) OnChange(fn func()) (remove func()) {
	h := NewHook(fn)
	b.AddHook(h)
	return func() { b.RemoveHook(h) }
}

// AddHook registers h as OnChange does fn; balancers remove their hook
// with RemoveHook when a reload replaces them, since a Backend outlives
// the balancers built around it.
func (b *Backend) AddHook(h *Hook) {
	hookMu.Lock()
	defer hookMu.Unlock()
	b.hooks.Store(withHook(b.hooks.Load(), h))
}

// hookNode is one registration in a backend's list of hooks. A list is
// never changed once published (a flip walks it without a lock): adding
// or removing a hook publishes a new list, sharing what it can. One hook,
// the usual case, is one node of 16 bytes (a slice was 32, in two
// allocations: 0.3 MB at 20,000 backends, issue 36).
type hookNode struct {
	h    *Hook
	next *hookNode
}

// withHook is l with h at its end (hooks run in the order they came).
func withHook(l *hookNode, h *Hook) *hookNode {
	if l == nil {
		return &hookNode{h: h}
	}
	return &hookNode{h: l.h, next: withHook(l.next, h)}
}

// withoutHook is l without h; the nodes after h are shared.
func withoutHook(l *hookNode, h *Hook) *hookNode {
	switch {
	case l == nil:
		return nil
	case l.h == h:
		return withoutHook(l.next, h)
	}
	rest := withoutHook(l.next, h)
	if rest == l.next {
		return l
	}
	return &hookNode{h: l.h, next: rest}
}

// RemoveHook publishes a list without h; flips in progress keep the old
// list, which is harmless because the callbacks are idempotent rebuilds.
func (b *Backend) RemoveHook(h *Hook) {
	hookMu.Lock()
	defer hookMu.Unlock()
	if old := b.hooks.Load(); old != nil {
		b.hooks.Store(withoutHook(old, h))
	}
}

// HookCount is the number of registered OnChange callbacks, so that the
// engine and tests can verify replaced balancers detached themselves.
func (b *Backend) HookCount() int {
	n := 0
	for l := b.hooks.Load(); l != nil; l = l.next {
		n++
	}
	return n
}

func (b *Backend) notify() {
	for l := b.hooks.Load(); l != nil; l = l.next {
		l.h.fn()
	}
}
