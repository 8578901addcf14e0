package engine

import (
	"slices"
	"strconv"

	"lbd/backend"
	"lbd/config"
	"lbd/service"
)

// emergencyGroup is Pound's balancer group of Emergency backends.
const emergencyGroup = 65535

// matrixKey identifies a matrix across rebuilds and reloads: the same
// service and the same lookup keep what the DNS said.
func matrixKey(scope string, svcIdx int, svc *config.Service, cb *config.Backend) string {
	return backendKey(scope, svcIdx, svc, cb) + "|" + cb.Rare().Resolve + "|" + cb.Rare().Family +
		"|" + strconv.FormatInt(int64(cb.Rare().OverrideTTL), 10) + "|" + strconv.FormatInt(int64(cb.Rare().RetryInterval), 10)
}

// entryKey is the identity of a configured regular backend, its key in
// the graph: the backendKey, or the matrixKey of a dynamic backend. A
// backend listed twice in a service (Pound allows it) is two backends to
// the same address, each with its own state and share: the Nth listing
// gets "#N". seen counts the listings of the service so far (Backends,
// then Emergency).
func entryKey(scope string, idx int, s *config.Service, cb *config.Backend, seen map[string]int) string {
	if cb.Dynamic() {
		return matrixKey(scope, idx, s, cb)
	}
	key := backendKey(scope, idx, s, cb)
	seen[key]++
	if n := seen[key]; n > 1 {
		key += "#" + strconv.Itoa(n)
	}
	return key
}

// tier is one balancer group of a layout: configured entries first, then
// the backends matrices made, as Pound appends them.
type tier struct{ conf, made []service.Entry }

// layout returns a service's entries in Pound's order, balancer group
// after group (Emergency last), and the backends among them. Matrices
// are expanded from the dynamic state as it is now.
func (b *builder) layout(scope string, idx int, s *config.Service) ([]service.Entry, []*backend.Backend) {
	if plainBackends(s) {
		return b.plainLayout(scope, idx, s)
	}
	return b.tieredLayout(scope, idx, s)
}

// tieredLayout is layout for any service: its backends by group, matrices
// expanded.
func (b *builder) tieredLayout(scope string, idx int, s *config.Service) ([]service.Entry, []*backend.Backend) {
	tiers := map[int]*tier{}
	at := func(g int) *tier {
		if tiers[g] == nil {
			tiers[g] = &tier{}
		}
		return tiers[g]
	}
	seen := map[string]int{}
	src := b.serviceSource(scope, s)
	add := func(cb *config.Backend, base int) {
		if cb.Kind != config.BackendRegular {
			return
		}
		key := entryKey(scope, idx, s, cb, seen)
		if !cb.Dynamic() {
			be := b.backend(key, cb, 0, src)
			at(base).conf = append(at(base).conf, service.Entry{Backend: be, Parent: -1})
			return
		}
		b.next.matrices[key] = cb
		at(base).conf = append(at(base).conf, service.Entry{Matrix: cb, Key: key, Parent: -1})
		for _, c := range b.dyn.view(key).children {
			g := base
			if c.srv && base != emergencyGroup {
				g = c.group
			}
			be := b.backend(key+"/"+c.addr.String(), childConfig(cb, c), g, src)
			at(g).made = append(at(g).made, service.Entry{Backend: be, Matrix: cb, Key: key})
		}
	}
	for _, cb := range s.Backends {
		add(cb, 0)
	}
	for _, cb := range s.Rare().Emergency {
		add(cb, emergencyGroup)
	}
	return flatten(tiers)
}

// plainBackends reports whether s has static backends only, no
// Emergency and no matrix: one group, in the file's order.
func plainBackends(s *config.Service) bool {
	if len(s.Rare().Emergency) > 0 {
		return false
	}
	for _, cb := range s.Backends {
		if cb.Dynamic() {
			return false
		}
	}
	return true
}

// plainLayout is layout for a service of plainBackends: what flatten
// makes of its one group, each slice made at its size (at 10,000
// services the tiers, maps and slices grown on the way were 1.7 MB of
// garbage left among what the build keeps, issue 36).
func (b *builder) plainLayout(scope string, idx int, s *config.Service) ([]service.Entry, []*backend.Backend) {
	n := 0
	for _, cb := range s.Backends {
		if cb.Kind == config.BackendRegular {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	entries := make([]service.Entry, 0, n)
	bes := make([]*backend.Backend, 0, n)
	seen := map[string]int{}
	src := b.serviceSource(scope, s)
	for _, cb := range s.Backends {
		if cb.Kind != config.BackendRegular {
			continue
		}
		be := b.backend(entryKey(scope, idx, s, cb, seen), cb, 0, src)
		entries = append(entries, service.Entry{Backend: be, Parent: -1})
		bes = append(bes, be)
	}
	return entries, bes
}

// flatten orders the tiers and points each made backend at its matrix.
func flatten(tiers map[int]*tier) ([]service.Entry, []*backend.Backend) {
	groups := make([]int, 0, len(tiers))
	for g := range tiers {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	var entries []service.Entry
	for _, g := range groups {
		entries = append(append(entries, tiers[g].conf...), tiers[g].made...)
	}
	parent := map[string]int{}
	var bes []*backend.Backend
	for i, e := range entries {
		switch {
		case e.Backend == nil:
			parent[e.Key] = i
		case e.Matrix != nil:
			entries[i].Parent = parent[e.Key] // the matrix is in group 0 or earlier in its own
			bes = append(bes, e.Backend)
		default:
			bes = append(bes, e.Backend)
		}
	}
	return entries, bes
}

// childConfig is the configuration of a backend a matrix made: the
// matrix's settings with the address found, and for SRV records the
// record's weight as Priority (1 for a priority whose weights are all 0,
// unless IgnoreSRVWeight keeps the matrix's), as Pound does.
func childConfig(m *config.Backend, c child) *config.Backend {
	cb := *m
	cb.Address, cb.Port = c.addr.Addr().String(), int(c.addr.Port())
	cb.SetRare().Resolve, cb.Unresolved = "", false
	switch {
	case !c.srv || m.Rare().IgnoreSRVWeight:
	case c.maxWeight == 0:
		cb.Priority = 1
	default:
		cb.Priority = c.weight
	}
	return &cb
}
