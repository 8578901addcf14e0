package engine

import (
	"fmt"
	"math"
	"strings"

	"lbd/adminapi"
	"lbd/backend"
	"lbd/balancer"
	"lbd/config"
	"lbd/handoff"
	"lbd/service"
)

// Runtime changes of one backend, lbd extensions of both control APIs.
// SetBackend sets its Priority, Weight or ConnLimit in place: the
// balancers are told as of a flip and republish their snapshots, nothing
// is rebuilt. RemoveBackend rebuilds the running configuration without
// it, as a reload of a file without it would (its sessions go, requests
// in flight finish, its connections close). Both last until the file is
// read again, and both are journaled for a binary upgrade and reported
// to a cluster.

// Ranges of the values, as the configuration allows them.
const (
	poundMaxPriority  = 65535 // Pound's PRI_MAX: the weight of random and iwrr
	zproxyMaxPriority = 9     // zproxy's tiers
	maxSetting        = math.MaxInt32
)

// backendValues are values of the Priority, Weight and ConnLimit
// statements; nil leaves one unchanged.
type backendValues struct {
	priority, weight, connLimit *int
}

// SetBackend changes a backend's weight, priority or connection limit.
func (e *Engine) SetBackend(ref adminapi.Ref, s adminapi.BackendSettings) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	svc, b, err := e.editable(ref)
	if err != nil {
		return err
	}
	v, err := resolveSettings(e.g.cfg.Dialect, svc.Cfg, s)
	if err != nil {
		return err
	}
	e.setValuesLocked(b, v)
	l, sn, bn := e.g.names(ref)
	for _, c := range valueChanges(poundBalanced(svc.Cfg), v) {
		c.Listener, c.Service, c.Backend = l, sn, bn
		e.changed(c)
	}
	return nil
}

// editable resolves ref to a backend whose settings the control API may
// change: not a special backend, nor a dynamic backend (whose weights
// come from the DNS), nor one a dynamic backend made.
func (e *Engine) editable(ref adminapi.Ref) (*service.Service, *backend.Backend, error) {
	svc, err := e.lookup(ref)
	if err != nil {
		return nil, nil, err
	}
	en, err := entryAt(svc, ref.Backend)
	switch {
	case err != nil:
		return nil, nil, err
	case en.Backend == nil:
		return nil, nil, fmt.Errorf("backend %d is the dynamic backend %s; its backends take their settings from it and the DNS: %w",
			ref.Backend, en.Matrix.Address, adminapi.ErrInvalid)
	case en.Matrix != nil:
		return nil, nil, fmt.Errorf("backend %d was made by the dynamic backend %s; its settings come from that one and the DNS: %w",
			ref.Backend, en.Matrix.Address, adminapi.ErrInvalid)
	}
	return svc, en.Backend, nil
}

// resolveSettings turns what the API was asked into statement values,
// checked against the ranges the configuration allows: under Pound's
// random or iwrr the weight is the Priority, under a RoutingPolicy it is
// zproxy's Weight and the priority a tier.
func resolveSettings(d config.Dialect, s *config.Service, set adminapi.BackendSettings) (backendValues, error) {
	if set.Weight == nil && set.Priority == nil && set.ConnLimit == nil {
		return backendValues{}, fmt.Errorf("nothing to change: give a weight, a priority or a connlimit: %w", adminapi.ErrInvalid)
	}
	v := backendValues{priority: set.Priority, connLimit: set.ConnLimit}
	if poundBalanced(s) {
		if set.Weight != nil {
			if set.Priority != nil && *set.Priority != *set.Weight {
				return v, fmt.Errorf("weight %d and priority %d differ, but in a service balanced by %s the weight is the Priority: %w",
					*set.Weight, *set.Priority, balancerName(s), adminapi.ErrInvalid)
			}
			if lo, hi := priorityRange(d, s); *set.Weight < lo || *set.Weight > hi {
				return v, fmt.Errorf("weight %d out of range %d-%d (in a service balanced by %s the weight is the Priority): %w",
					*set.Weight, lo, hi, balancerName(s), adminapi.ErrInvalid)
			}
			v.priority = set.Weight
		}
	} else {
		v.weight = set.Weight
	}
	return v, checkValues(d, s, v)
}

// priorityRange is what the configuration allows a Priority to be: a
// tier of 1-9 in a zproxy file or under a RoutingPolicy, Pound's 0-65535
// otherwise.
func priorityRange(d config.Dialect, s *config.Service) (int, int) {
	if d == config.DialectZproxy || !poundBalanced(s) {
		return 1, zproxyMaxPriority
	}
	return 0, poundMaxPriority
}

// checkValues checks statement values against the service's ranges.
func checkValues(d config.Dialect, s *config.Service, v backendValues) error {
	prioMin, prioMax := priorityRange(d, s)
	for _, c := range []struct {
		name     string
		p        *int
		min, max int
	}{
		{"priority", v.priority, prioMin, prioMax},
		{"weight", v.weight, 1, maxSetting},
		{"connlimit", v.connLimit, 0, maxSetting},
	} {
		if c.p != nil && (*c.p < c.min || *c.p > c.max) {
			return fmt.Errorf("%s %d out of range %d-%d (in a service balanced by %s): %w",
				c.name, *c.p, c.min, c.max, balancerName(s), adminapi.ErrInvalid)
		}
	}
	return nil
}

// poundBalanced reports a service balanced by Pound's algorithms, where
// the Priority is the weight and there are no tiers.
func poundBalanced(s *config.Service) bool {
	_, mode, err := algorithm(s)
	return err == nil && mode == balancer.PoundMode
}

func balancerName(s *config.Service) string {
	switch {
	case s.RoutingPolicy != "":
		return s.RoutingPolicy
	case s.Balancer != "":
		return strings.ToLower(s.Balancer)
	}
	return "random"
}

// setValuesLocked applies values to b and journals them.
func (e *Engine) setValuesLocked(b *backend.Backend, v backendValues) {
	if v.priority != nil {
		b.SetPriority(*v.priority)
	}
	if v.weight != nil {
		b.SetWeight(*v.weight)
	}
	if v.connLimit != nil {
		b.SetConnLimit(*v.connLimit)
	}
	if key, ok := e.g.keyOf(b); ok {
		e.runtime.set(key, v)
	}
}

// valueChanges are the cluster changes for values set in a service
// (pound: balanced by Pound's algorithms), one per value (each is a field
// of the cluster's state of its own). They say what was meant, not which
// statement holds it: the balancing weight is a ChangeBackendWeight
// whether it is Pound's Priority or zproxy's Weight, so that an instance
// whose service balances otherwise applies it to its own weight, and one
// value never travels as two fields.
func valueChanges(pound bool, v backendValues) []adminapi.Change {
	var out []adminapi.Change
	weight, tier := v.weight, v.priority
	if pound {
		weight, tier = v.priority, nil
	}
	if weight != nil {
		out = append(out, adminapi.Change{Kind: adminapi.ChangeBackendWeight, Spec: adminapi.BackendSpec{Weight: *weight}})
	}
	if tier != nil {
		out = append(out, adminapi.Change{Kind: adminapi.ChangeBackendPriority, Spec: adminapi.BackendSpec{Priority: *tier}})
	}
	if v.connLimit != nil {
		out = append(out, adminapi.Change{Kind: adminapi.ChangeBackendConnLimit, Spec: adminapi.BackendSpec{ConnLimit: *v.connLimit}})
	}
	return out
}

// changeValues is what a cluster change sets in a service (pound as for
// valueChanges); a tier means nothing under Pound's balancing and sets
// nothing there.
func changeValues(pound bool, c adminapi.Change) backendValues {
	switch c.Kind {
	case adminapi.ChangeBackendWeight:
		if pound {
			return backendValues{priority: &c.Spec.Weight}
		}
		return backendValues{weight: &c.Spec.Weight}
	case adminapi.ChangeBackendPriority:
		if pound {
			return backendValues{}
		}
		return backendValues{priority: &c.Spec.Priority}
	}
	return backendValues{connLimit: &c.Spec.ConnLimit}
}

// holds reports whether b has the values already.
func (v backendValues) holds(b *backend.Backend) bool {
	return (v.priority == nil || *v.priority == b.Priority()) &&
		(v.weight == nil || *v.weight == b.Weight()) &&
		(v.connLimit == nil || *v.connLimit == b.ConnLimit())
}

// keyOf is b's key in the graph.
func (g *graph) keyOf(b *backend.Backend) (string, bool) {
	for k, x := range g.backends {
		if x == b {
			return k, true
		}
	}
	return "", false
}

// RemoveBackend removes a backend from its service.
func (e *Engine) RemoveBackend(ref adminapi.Ref) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, err := e.removeBackendLocked(ref)
	if err != nil {
		return err
	}
	e.changed(c)
	return nil
}

func (e *Engine) removeBackendLocked(ref adminapi.Ref) (adminapi.Change, error) {
	svc, err := e.lookup(ref)
	if err != nil {
		return adminapi.Change{}, err
	}
	en, err := entryAt(svc, ref.Backend)
	if err != nil {
		return adminapi.Change{}, err
	}
	key := en.Key // a matrix: its matrixKey
	if en.Backend != nil {
		if en.Matrix != nil {
			return adminapi.Change{}, fmt.Errorf("backend %d was made by the dynamic backend %s; remove that one: %w",
				ref.Backend, en.Matrix.Address, adminapi.ErrInvalid)
		}
		key, _ = e.g.keyOf(en.Backend) // every backend of the Listing is in the graph
		if e.g.backends[dupBase(key)+"#2"] != nil {
			// The listings of one address are told apart by their rank:
			// removing one would hand its state to the next.
			return adminapi.Change{}, fmt.Errorf("backend %d: its address is listed more than once in the service; edit the configuration: %w",
				ref.Backend, adminapi.ErrConflict)
		}
	}
	at, ok := locateBackend(e.g.cfg, key)
	if !ok {
		return adminapi.Change{}, fmt.Errorf("backend %d (%s) is not in the running configuration", ref.Backend, key)
	}
	l, s, b := e.g.names(ref) // named before the rebuild renumbers
	if err := e.rebuildLocked(withoutBackend(e.g.cfg, at)); err != nil {
		return adminapi.Change{}, err
	}
	e.runtime.remove(key)
	return adminapi.Change{Kind: adminapi.ChangeBackendRemoved, Listener: l, Service: s, Backend: b}, nil
}

// dupBase is key without the "#N" that entryKey adds to the Nth listing
// of an address (the suffix is at the very end, after the address).
func dupBase(key string) string {
	i := strings.LastIndexByte(key, '#')
	if i < 0 || i == len(key)-1 || strings.Trim(key[i+1:], "0123456789") != "" {
		return key
	}
	return key[:i]
}

// backendSlot is where a configured backend is: the service (listener
// -1 for the global services) and its place in Backends or Emergency.
type backendSlot struct {
	listener, service int
	emergency         bool
	index             int
}

// locateBackend finds the regular backend whose key (entryKey) is key.
func locateBackend(cfg *config.Config, key string) (backendSlot, bool) {
	inService := func(li int, scope string, si int, s *config.Service) (backendSlot, bool) {
		if !strings.HasPrefix(key, serviceKey(scope, si, s.Name)+"/") {
			return backendSlot{}, false
		}
		seen := map[string]int{}
		for _, list := range []struct {
			bs        []*config.Backend
			emergency bool
		}{{s.Backends, false}, {s.Rare().Emergency, true}} {
			for i, cb := range list.bs {
				if cb.Kind == config.BackendRegular && entryKey(scope, si, s, cb, seen) == key {
					return backendSlot{listener: li, service: si, emergency: list.emergency, index: i}, true
				}
			}
		}
		return backendSlot{}, false
	}
	for si, s := range cfg.Services {
		if at, ok := inService(-1, "g", si, s); ok {
			return at, true
		}
	}
	for li, l := range cfg.Listeners {
		for si, s := range l.Services {
			if at, ok := inService(li, "l"+fmt.Sprint(li), si, s); ok {
				return at, true
			}
		}
	}
	return backendSlot{}, false
}

// editService returns a copy of cfg in which the service at is a copy,
// changed by fn; nothing of cfg is modified.
func editService(base *config.Config, at backendSlot, fn func(s *config.Service)) *config.Config {
	cfg := *base
	var list *[]*config.Service
	if at.listener < 0 {
		list = &cfg.Services
	} else {
		cfg.Listeners = append([]*config.Listener(nil), cfg.Listeners...)
		l := *cfg.Listeners[at.listener]
		cfg.Listeners[at.listener] = &l
		list = &l.Services
	}
	*list = append([]*config.Service(nil), *list...)
	s := *(*list)[at.service]
	(*list)[at.service] = &s
	fn(&s)
	return &cfg
}

// slotList is the backend list of s that at points into.
func slotList(s *config.Service, at backendSlot) *[]*config.Backend {
	if at.emergency {
		return &s.SetRare().Emergency
	}
	return &s.Backends
}

// withoutBackend returns a copy of cfg without the backend at.
func withoutBackend(base *config.Config, at backendSlot) *config.Config {
	return editService(base, at, func(s *config.Service) {
		list := slotList(s, at)
		*list = append(append([]*config.Backend(nil), (*list)[:at.index]...), (*list)[at.index+1:]...)
	})
}

// withBackendSettings returns a copy of cfg whose backend at has set.
func withBackendSettings(base *config.Config, at backendSlot, set handoff.BackendSettings) *config.Config {
	return editService(base, at, func(s *config.Service) {
		list := slotList(s, at)
		*list = append([]*config.Backend(nil), *list...)
		(*list)[at.index] = withSettings((*list)[at.index], set)
	})
}

// withSettings returns a copy of cb with the values of set.
func withSettings(cb *config.Backend, set handoff.BackendSettings) *config.Backend {
	c := *cb
	if set.Priority != nil {
		c.Priority = *set.Priority
	}
	if set.Weight != nil {
		c.Weight = *set.Weight
	}
	if set.ConnLimit != nil {
		c.ConnLimit = *set.ConnLimit
	}
	return &c
}
