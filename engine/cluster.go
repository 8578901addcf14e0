package engine

import (
	"errors"
	"fmt"
	"strconv"

	"lbd/adminapi"
	"lbd/backend"
	"lbd/service"
)

// What a cluster member (package cluster) needs of the engine: control
// changes named the way every instance names them, reported as they are
// made (Options.Cluster), applied when a peer made them (ApplyChange),
// and the session tables to share (SessionServices).
//
// Objects are named, not numbered, because instances of one cluster may
// run different configurations: a listener by its name, or "#N" (its
// position) when unnamed; a service likewise within its listener, with
// listener "" for the global services; a backend by its zproxy id
// (address-port), a UNIX-socket backend by its path, and a dynamic
// backend (matrix) by "matrix:" and its host name and port.

func (g *graph) listenerName(i int) string {
	if i < 0 || i >= len(g.cfg.Listeners) {
		return ""
	}
	if n := g.cfg.Listeners[i].Name; n != "" {
		return n
	}
	return "#" + strconv.Itoa(i)
}

func serviceName(i int, s *service.Service) string {
	if s.Name != "" {
		return s.Name
	}
	return "#" + strconv.Itoa(i)
}

func entryName(en service.Entry) string {
	if en.Backend == nil {
		return "matrix:" + en.Matrix.Address + ":" + strconv.Itoa(en.Matrix.Port)
	}
	return backendName(en.Backend)
}

func backendName(b *backend.Backend) string {
	if id := b.ID(); id != "" {
		return id
	}
	return b.Address()
}

// names resolves a ref against g; parts that do not resolve are "".
func (g *graph) names(ref adminapi.Ref) (listener, svc, be string) {
	listener = g.listenerName(ref.Listener)
	if ref.Service < 0 {
		return listener, "", ""
	}
	list := g.global
	if ref.Listener >= 0 {
		if ref.Listener >= len(g.services) {
			return listener, "", ""
		}
		list = g.services[ref.Listener]
	}
	if ref.Service >= len(list) {
		return listener, "", ""
	}
	s := list[ref.Service]
	svc = serviceName(ref.Service, s)
	if ref.Backend >= 0 {
		if en, err := entryAt(s, ref.Backend); err == nil {
			be = entryName(en)
		}
	}
	return listener, svc, be
}

// ref resolves cluster names against g: listener "" is the global
// services, service "" the listener itself, backend "" the service.
func (g *graph) ref(listener, svc, be string) (adminapi.Ref, error) {
	ref := adminapi.Ref{Listener: -1, Service: -1, Backend: -1}
	list := g.global
	if listener != "" {
		li := -1
		for i := range g.cfg.Listeners {
			if g.listenerName(i) == listener {
				li = i
				break
			}
		}
		if li < 0 {
			return ref, fmt.Errorf("listener %q: %w", listener, adminapi.ErrNotFound)
		}
		ref.Listener, list = li, g.services[li]
	}
	if svc == "" {
		if listener == "" {
			return ref, fmt.Errorf("no listener or service named: %w", adminapi.ErrInvalid)
		}
		return ref, nil
	}
	for i, s := range list {
		if serviceName(i, s) == svc {
			ref.Service = i
			break
		}
	}
	if ref.Service < 0 {
		return ref, fmt.Errorf("service %q: %w", svc, adminapi.ErrNotFound)
	}
	if be == "" {
		return ref, nil
	}
	s := list[ref.Service]
	offset := 0
	if s.Special != nil {
		offset = 1 // backendAt numbers the special backend first
	}
	for i, en := range s.Listing {
		if entryName(en) == be {
			ref.Backend = i + offset
			return ref, nil
		}
	}
	return ref, fmt.Errorf("backend %q: %w", be, adminapi.ErrNotFound)
}

// changed reports a change made through the control API. Lock held.
func (e *Engine) changed(c adminapi.Change) {
	if what := changeText(c); what != "" {
		// The control API's audit line says who asked; this one what
		// changed, with the listener, service and backend as fields.
		e.opts.Log.WithFields(e.changeFields(c)).Info("control API change applied: " + what)
	}
	if e.opts.Cluster != nil {
		e.opts.Cluster.Changed(c)
	}
}

func (e *Engine) enabledChange(ref adminapi.Ref, on bool) adminapi.Change {
	l, s, b := e.g.names(ref)
	return adminapi.Change{Kind: adminapi.ChangeEnabled, Listener: l, Service: s, Backend: b, Enabled: on}
}

func (e *Engine) addedChange(ref adminapi.Ref, spec adminapi.BackendSpec) adminapi.Change {
	l, s, _ := e.g.names(ref)
	return adminapi.Change{Kind: adminapi.ChangeBackendAdded, Listener: l, Service: s,
		Backend: spec.Address + "-" + strconv.Itoa(spec.Port), Spec: spec}
}

// ApplyChange applies a change a peer made, by names, without reporting
// it back (which would echo it around the cluster forever). A change
// that is already in effect does nothing, so re-applying a cluster's
// state after a reload costs no rebuild. An object this instance does
// not have is ErrNotFound.
//
// Before Start, backends and services take their state and settings at
// once (so the first requests already see them), while listeners,
// runtime backends (added or removed) and log levels are ErrNotFound: the
// first needs the bound sockets and the others a rebuild, which would
// bind them; the cluster applies them again once the engine runs.
func (e *Engine) ApplyChange(c adminapi.Change) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel == nil && needsRebuild(c.Kind) {
		return fmt.Errorf("not started yet: %w", adminapi.ErrNotFound)
	}
	switch c.Kind {
	case adminapi.ChangeBackendPriority, adminapi.ChangeBackendWeight, adminapi.ChangeBackendConnLimit:
		return e.applyValuesLocked(c)
	case adminapi.ChangeBackendRemoved:
		return e.applyRemovalLocked(c)
	case adminapi.ChangeEnabled:
		ref, err := e.g.ref(c.Listener, c.Service, c.Backend)
		if err != nil {
			return err
		}
		return e.setEnabledLocked(ref, c.Enabled)
	case adminapi.ChangeBackendAdded:
		ref, err := e.g.ref(c.Listener, c.Service, "")
		if err != nil {
			return err
		}
		if ref.Service < 0 {
			return fmt.Errorf("no service named: %w", adminapi.ErrInvalid)
		}
		if _, err := e.g.ref(c.Listener, c.Service, c.Backend); err == nil {
			return nil // there already
		}
		err = e.addBackendLocked(ref, c.Spec)
		if errors.Is(err, adminapi.ErrConflict) {
			return nil
		}
		return err
	case adminapi.ChangeLogLevel:
		li := -1
		if c.Listener != "" {
			ref, err := e.g.ref(c.Listener, "", "")
			if err != nil {
				return err
			}
			li = ref.Listener
		}
		if e.g.logLevel(li) == c.Level || (li < 0 && c.Level == "" && e.g.cfg.LogLevel == "null") {
			return nil
		}
		return e.setLogLevelLocked(li, c.Level)
	}
	return fmt.Errorf("change kind %d: %w", c.Kind, adminapi.ErrInvalid)
}

// needsRebuild reports the changes an engine applies only once it runs.
func needsRebuild(k adminapi.ChangeKind) bool {
	switch k {
	case adminapi.ChangeEnabled, adminapi.ChangeBackendPriority, adminapi.ChangeBackendWeight, adminapi.ChangeBackendConnLimit:
		return false
	}
	return true
}

// applyValuesLocked applies a peer's Priority, Weight or ConnLimit.
func (e *Engine) applyValuesLocked(c adminapi.Change) error {
	ref, err := e.g.ref(c.Listener, c.Service, c.Backend)
	if err != nil {
		return err
	}
	if ref.Backend < 0 {
		return fmt.Errorf("no backend named: %w", adminapi.ErrInvalid)
	}
	svc, b, err := e.editable(ref)
	if err != nil {
		return err
	}
	v := changeValues(poundBalanced(svc.Cfg), c)
	if v.holds(b) {
		return nil // in effect already, or a tier where there are none
	}
	if err := checkValues(e.g.cfg.Dialect, svc.Cfg, v); err != nil {
		return err
	}
	e.setValuesLocked(b, v)
	return nil
}

// applyRemovalLocked removes a backend a peer removed; one that is not
// there is not an error (a removal is a state: the backend is absent),
// but a listener or service this instance lacks is ErrNotFound.
func (e *Engine) applyRemovalLocked(c adminapi.Change) error {
	if _, err := e.g.ref(c.Listener, c.Service, ""); err != nil {
		return err
	}
	ref, err := e.g.ref(c.Listener, c.Service, c.Backend)
	if errors.Is(err, adminapi.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = e.removeBackendLocked(ref)
	return err
}

// logLevel is the log format of listener li (its own, "" if none), or
// with li -1 the global one.
func (g *graph) logLevel(li int) string {
	if li < 0 {
		return g.cfg.LogLevel
	}
	return g.cfg.Listeners[li].LogLevel
}

// SessionServices returns the services of the current graph that keep
// sessions, by their cluster names {listener, service}.
func (e *Engine) SessionServices() map[[2]string]*service.Service {
	e.mu.Lock()
	g := e.g
	e.mu.Unlock()
	out := map[[2]string]*service.Service{}
	add := func(listener string, list []*service.Service) {
		for i, s := range list {
			if s.Sessions != nil {
				out[[2]string{listener, serviceName(i, s)}] = s
			}
		}
	}
	add("", g.global)
	for li, list := range g.services {
		add(g.listenerName(li), list)
	}
	return out
}

// clusterStatus is the cluster member's state for State, nil without one.
func (e *Engine) clusterStatus() *adminapi.ClusterStatus {
	if e.opts.Cluster == nil {
		return nil
	}
	return e.opts.Cluster.Status()
}
