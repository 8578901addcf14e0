// Package balancer chooses a backend for a request. Every algorithm of Pound
// (weighted random, iwrr) and zproxy (ROUND_ROBIN, LEAST_CONNECTIONS,
// RESPONSE_TIME, PENDING_CONNECTIONS) is precomputed when the balancer is
// built and whenever a backend flips enabled/alive: the eligible set is
// published as an immutable snapshot through an atomic pointer, so Pick takes
// no lock and allocates nothing. ConnLimit changes with every connection, so
// it is checked at pick time instead, skipping to the next candidate.
package balancer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"lbd/backend"
)

// Algorithm picks a backend; nil means none is available (503). The one
// method is all a service needs, which keeps fakes trivial.
type Algorithm interface {
	Pick() *backend.Backend
}

// Kind names a balancing algorithm.
type Kind int

// The algorithms. Random is Pound's default; zproxy's default is RoundRobin.
const (
	// Random is Pound's weighted random choice (weight = Priority in
	// PoundMode).
	Random Kind = iota
	// IWRR is Pound 4's interleaved weighted round robin: in round r every
	// backend whose weight exceeds r is used once, in config order.
	IWRR
	// RoundRobin is zproxy's ROUND_ROBIN: each backend is used weight times
	// in a row, then the next one in config order.
	RoundRobin
	// LeastConnections picks the minimum (established+pending)/weight.
	LeastConnections
	// ResponseTime picks the minimum latency average/weight; backends
	// without a sample go first.
	ResponseTime
	// PendingConnections picks the minimum pending/weight.
	PendingConnections
)

var kindNames = [...]string{"random", "iwrr", "ROUND_ROBIN", "LEAST_CONNECTIONS", "RESPONSE_TIME", "PENDING_CONNECTIONS"}

// String returns the name the configuration uses for k.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// ErrUnknownKind is wrapped by ParseKind errors.
var ErrUnknownKind = errors.New("unknown balancing algorithm")

// ParseKind maps a Pound "Balancer" value (random|iwrr, case-insensitive
// like all Pound keywords) or a zproxy "RoutingPolicy" value (case-sensitive
// upper case, as zproxy's parser) to a Kind. Pass "" for the one not given;
// both empty yields Pound's default, Random. Both set is an error.
func ParseKind(pound, zproxy string) (Kind, error) {
	switch {
	case pound != "" && zproxy != "":
		return 0, fmt.Errorf("%w: both Balancer %q and RoutingPolicy %q given", ErrUnknownKind, pound, zproxy)
	case zproxy != "":
		for k := RoundRobin; k <= PendingConnections; k++ {
			if zproxy == kindNames[k] {
				return k, nil
			}
		}
		return 0, fmt.Errorf("%w: RoutingPolicy %q", ErrUnknownKind, zproxy)
	}
	switch strings.ToLower(pound) {
	case "", "random":
		return Random, nil
	case "iwrr":
		return IWRR, nil
	}
	return 0, fmt.Errorf("%w: Balancer %q", ErrUnknownKind, pound)
}

// Mode selects how backend Priority and Weight are read.
type Mode int

const (
	// PoundMode (default): Priority is the weight and there are no tiers.
	// A backend with Priority 0 is never picked, as in Pound 4.
	PoundMode Mode = iota
	// ZproxyMode: Weight is the weight and Priority is a tier; only
	// backends with Priority <= the service priority are eligible
	// (zproxy.md §3.7).
	ZproxyMode
)

// Option customises New.
type Option func(*Balancer)

// WithMode selects PoundMode or ZproxyMode.
func WithMode(m Mode) Option { return func(b *Balancer) { b.mode = m } }

// WithSource replaces math/rand/v2's global generator, for deterministic
// tests. The source is called concurrently by Pick unless the caller
// serialises picks: rand.PCG and rand.ChaCha8 are not safe for that.
func WithSource(src rand.Source) Option { return func(b *Balancer) { b.src = src } }

// Balancer implements Algorithm for every Kind. It must not be copied.
type Balancer struct {
	kind    Kind
	mode    Mode
	src     rand.Source
	snap    atomic.Pointer[snapshot]
	cursors []cursor // ring position per group, as tiers; ring kinds only

	mu    sync.Mutex // serialises rebuilds
	tiers []int      // the balancer groups present, in increasing order
	all   []*backend.Backend
	hook  *backend.Hook // registered with each of all
}

// cursor is padded away from the fields before it, so that advancing it
// does not invalidate the cache line holding the snapshot pointer, which
// every Pick reads.
type cursor struct {
	_ [64]byte
	n atomic.Uint64
}

// New builds a balancer over backends, given in config order with regular
// and Emergency backends mixed (Backend.Emergency tells them apart). It
// subscribes to the backends' flips; call Close when a reload replaces it.
func New(kind Kind, backends []*backend.Backend, opts ...Option) *Balancer {
	b := &Balancer{kind: kind, all: append([]*backend.Backend(nil), backends...)}
	for _, o := range opts {
		o(b)
	}
	b.tiers = tiersOf(b.all)
	if usesRing(kind) {
		// 72 bytes a group: the other kinds have none (issue 36).
		b.cursors = make([]cursor, len(b.tiers))
	}
	// The hook holds the balancer weakly: a balancer that was dropped
	// without Close costs each backend one no-op closure, not its snapshot.
	wp := weak.Make(b)
	b.hook = backend.NewHook(func() {
		if x := wp.Value(); x != nil {
			x.rebuild()
		}
	})
	for _, be := range b.all {
		be.AddHook(b.hook)
	}
	// The first snapshot is built once the hooks are in place, so that it
	// sees every flip before them and each flip after them rebuilds it
	// (one rebuild, not one before and one after: a snapshot made and
	// dropped per service was 1.5 MB of garbage at 10,000, issue 36).
	b.rebuild()
	return b
}

// Kind returns the algorithm.
func (b *Balancer) Kind() Kind { return b.kind }

// Close detaches the balancer from its backends' OnChange hooks. Pick keeps
// working on the last snapshot, so in-flight requests are unaffected.
func (b *Balancer) Close() {
	for _, be := range b.all {
		be.RemoveHook(b.hook)
		be.Unwatch(b)
	}
}

// Refresh republishes the eligible set from the backends' current state. The
// hooks do this on every flip; Refresh is for callers that changed state
// some other way and for tests.
func (b *Balancer) Refresh() { b.rebuild() }

// Priority returns the current zproxy service priority (§3.7), shown by the
// zproxy API; it is 0 in PoundMode.
func (b *Balancer) Priority() int { return b.snap.Load().priority }

// Eligible returns the backends of the current snapshot, group after
// group (regular ones, then emergency ones). For the control API and
// tests; it allocates.
func (b *Balancer) Eligible() []*backend.Backend {
	var out []*backend.Backend
	for _, g := range b.snap.Load().groups {
		out = append(out, g.bs...)
	}
	return out
}

// Pick returns the backend for the next request, or nil if none is
// available. Groups are tried in order: regular backends first, each
// further group (SRV priorities) only when the ones before it cannot take
// the request, Emergency backends last.
func (b *Balancer) Pick() *backend.Backend {
	s := b.snap.Load()
	for i := range s.groups {
		if be := b.pickGroup(&s.groups[i], i); be != nil {
			return be
		}
	}
	return nil
}

// PickMin is Pick starting at the first balancer group whose weight is
// min or more (Pound's http.balancer: a Lua script resending a request
// to, say, the Emergency backends, group 65535).
func (b *Balancer) PickMin(min int) *backend.Backend {
	s := b.snap.Load()
	for i := range s.groups {
		if b.tiers[i] < min {
			continue
		}
		if be := b.pickGroup(&s.groups[i], i); be != nil {
			return be
		}
	}
	return nil
}

// Tier is the balancer group of a backend: 0, an SRV priority, or 65535
// for an Emergency backend.
func Tier(be *backend.Backend) int { return tierOf(be) }

// usesRing reports whether the kind walks a ring with a cursor.
func usesRing(k Kind) bool { return k == IWRR || k == RoundRobin }

// pickGroup picks in group i.
func (b *Balancer) pickGroup(g *group, i int) *backend.Backend {
	if len(g.bs) == 0 {
		return nil
	}
	switch b.kind {
	case Random:
		return g.pickRandom(b.rand())
	case IWRR, RoundRobin:
		return g.pickRing(b.cursors[i].n.Add(1) - 1)
	case LeastConnections, ResponseTime, PendingConnections:
		if g.tree != nil {
			return g.tree.pick()
		}
		return g.scan(b.kind)
	}
	return nil
}

func (b *Balancer) rand() uint64 {
	if b.src != nil {
		return b.src.Uint64()
	}
	return rand.Uint64()
}
