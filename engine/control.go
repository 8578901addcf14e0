package engine

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"lbd/adminapi"
	"lbd/backend"
	"lbd/config"
	"lbd/handoff"
	"lbd/service"
)

// The Engine is the control API's Controller.
var _ adminapi.Controller = (*Engine)(nil)

// lookup resolves a Ref against the current graph.
func (e *Engine) lookup(ref adminapi.Ref) (*service.Service, error) {
	var list []*service.Service
	switch {
	case ref.Listener == -1:
		list = e.g.global
	case ref.Listener >= 0 && ref.Listener < len(e.g.services):
		list = e.g.services[ref.Listener]
	default:
		return nil, fmt.Errorf("listener %d: %w", ref.Listener, adminapi.ErrNotFound)
	}
	if ref.Service < 0 || ref.Service >= len(list) {
		return nil, fmt.Errorf("service %d: %w", ref.Service, adminapi.ErrNotFound)
	}
	return list[ref.Service], nil
}

// backendAt returns backend i of s as the control API numbers them: a
// special backend (redirect, error, ...) first, then the Listing.
func backendAt(s *service.Service, i int) (*backend.Backend, error) {
	en, err := entryAt(s, i)
	if err == nil && en.Backend == nil {
		err = fmt.Errorf("backend %d is a matrix: %w", i, adminapi.ErrInvalid)
	}
	return en.Backend, err
}

// entryAt returns entry i of the Listing, numbered as backendAt does.
func entryAt(s *service.Service, i int) (service.Entry, error) {
	if s.Special != nil {
		if i == 0 {
			return service.Entry{}, fmt.Errorf("backend %d is a %s backend: %w", i, s.Special.Kind, adminapi.ErrInvalid)
		}
		i--
	}
	if i < 0 || i >= len(s.Listing) {
		return service.Entry{}, fmt.Errorf("backend %d: %w", i, adminapi.ErrNotFound)
	}
	return s.Listing[i], nil
}

// SetEnabled enables or disables a listener, service or backend. Traffic
// sees the change at its next pick: the flags are atomics and balancers
// republish their snapshots on a backend flip.
func (e *Engine) SetEnabled(ref adminapi.Ref, on bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.setEnabledLocked(ref, on); err != nil {
		return err
	}
	e.changed(e.enabledChange(ref, on))
	return nil
}

func (e *Engine) setEnabledLocked(ref adminapi.Ref, on bool) error {
	if ref.Service < 0 {
		if ref.Listener < 0 || ref.Listener >= len(e.servers) {
			return fmt.Errorf("listener %d: %w", ref.Listener, adminapi.ErrNotFound)
		}
		e.servers[ref.Listener].srv.SetEnabled(on)
		return nil
	}
	s, err := e.lookup(ref)
	if err != nil {
		return err
	}
	if ref.Backend < 0 {
		s.SetEnabled(on)
		return nil
	}
	en, err := entryAt(s, ref.Backend)
	if err != nil {
		return err
	}
	if en.Backend == nil {
		// A matrix: disabling drops its backends, enabling looks its
		// name up again; the rebuild that follows shows the result.
		e.dyn.setEnabled(en.Key, on)
		return nil
	}
	if b := en.Backend; b.SetEnabled(on) && on && e.prober != nil {
		e.prober.Add(b) // probe at once if it was dead meanwhile
	}
	return nil
}

// SetLogLevel changes the request log format of one listener, or the
// global one (listener -1) for every listener without its own.
func (e *Engine) SetLogLevel(listener int, level string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.setLogLevelLocked(listener, level); err != nil {
		return err
	}
	e.changed(adminapi.Change{Kind: adminapi.ChangeLogLevel, Listener: e.g.listenerName(listener), Level: level})
	return nil
}

func (e *Engine) setLogLevelLocked(listener int, level string) error {
	cfg, err := withLogLevel(e.g.cfg, listener, level)
	if err != nil {
		return err
	}
	if err := e.rebuildLocked(cfg); err != nil {
		return err
	}
	ll := handoff.LogLevel{Level: level}
	if listener >= 0 {
		ll.Listener = bindKeys(cfg.Listeners)[listener]
	}
	e.runtime.levels = append(e.runtime.levels, ll)
	return nil
}

// withLogLevel returns a copy of cfg with the log format set.
func withLogLevel(base *config.Config, listener int, level string) (*config.Config, error) {
	if level != "" {
		if _, ok := formatByName[level]; !ok {
			if _, named := base.LogFormats[level]; !named {
				return nil, fmt.Errorf("log format %q: %w", level, adminapi.ErrInvalid)
			}
		}
	}
	cfg := *base
	cfg.Listeners = append([]*config.Listener(nil), cfg.Listeners...)
	if listener < 0 {
		if level == "" {
			level = "null"
		}
		cfg.LogLevel = level
		return &cfg, nil
	}
	if listener >= len(cfg.Listeners) {
		return nil, fmt.Errorf("listener %d: %w", listener, adminapi.ErrNotFound)
	}
	l := *cfg.Listeners[listener]
	l.LogLevel = level
	cfg.Listeners[listener] = &l
	return &cfg, nil
}

// AddBackend adds a backend to a service at runtime, as zproxy's PUT
// .../backends: the running config is copied, the backend appended and
// the copy applied like a reload. The file is not changed, so the next
// reload drops it (zproxy does the same).
func (e *Engine) AddBackend(ref adminapi.Ref, spec adminapi.BackendSpec) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.addedChange(ref, spec) // named in the graph ref indexes, before the reload replaces it
	if err := e.addBackendLocked(ref, spec); err != nil {
		return err
	}
	e.changed(c)
	return nil
}

func (e *Engine) addBackendLocked(ref adminapi.Ref, spec adminapi.BackendSpec) error {
	cfg, err := withBackend(e.g.cfg, ref, spec)
	if err != nil {
		return err
	}
	if err := e.rebuildLocked(cfg); err != nil {
		return err
	}
	svc := cfg.Listeners[ref.Listener].Services[ref.Service]
	e.runtime.added = append(e.runtime.added, handoff.AddedBackend{
		Service: serviceKey("l"+strconv.Itoa(ref.Listener), ref.Service, svc.Name),
		Address: spec.Address, Port: spec.Port, HTTPS: spec.HTTPS,
		Weight: spec.Weight, Priority: spec.Priority, ConnLimit: spec.ConnLimit,
	})
	return nil
}

// withBackend returns a copy of cfg with a backend appended to a
// service of a listener.
func withBackend(base *config.Config, ref adminapi.Ref, spec adminapi.BackendSpec) (*config.Config, error) {
	if ref.Listener < 0 || ref.Listener >= len(base.Listeners) {
		return nil, fmt.Errorf("listener %d: %w", ref.Listener, adminapi.ErrNotFound)
	}
	cfg := *base
	cfg.Listeners = append([]*config.Listener(nil), cfg.Listeners...)
	l := *cfg.Listeners[ref.Listener]
	if ref.Service < 0 || ref.Service >= len(l.Services) {
		return nil, fmt.Errorf("service %d: %w", ref.Service, adminapi.ErrNotFound)
	}
	l.Services = append([]*config.Service(nil), l.Services...)
	s := *l.Services[ref.Service]
	if net.ParseIP(spec.Address) == nil || spec.Port <= 0 || spec.Port > 65535 {
		return nil, fmt.Errorf("address %s port %d: %w", spec.Address, spec.Port, adminapi.ErrInvalid)
	}
	for _, b := range s.Backends {
		if b.Address == spec.Address && b.Port == spec.Port {
			return nil, fmt.Errorf("backend %s-%d exists: %w", spec.Address, spec.Port, adminapi.ErrConflict)
		}
	}
	nb := &config.Backend{
		Kind: config.BackendRegular, Address: spec.Address, Port: spec.Port, HTTPS: spec.HTTPS,
		Weight: max(spec.Weight, 1), Priority: max(spec.Priority, 1), ConnLimit: spec.ConnLimit,
		TimeOut: cfg.Timeouts.TimeOut, ConnTO: cfg.Timeouts.ConnTO, WSTimeOut: cfg.Timeouts.WSTime,
	}
	s.Backends = append(append([]*config.Backend(nil), s.Backends...), nb)
	l.Services[ref.Service] = &s
	cfg.Listeners[ref.Listener] = &l
	return &cfg, nil
}

// ApplyRuntime makes the control API changes a handed-over state
// journals (backends removed, added and re-weighted, log formats set) to
// a configuration loaded from the file, as the previous process had made
// them to its own: removals first (a backend removed and added again is
// the one added), then additions, then settings. A change whose object
// the file no longer has is skipped and reported.
func ApplyRuntime(cfg *config.Config, st *handoff.State) (*config.Config, []string) {
	var skipped []string
	for _, key := range st.Removed {
		at, ok := locateBackend(cfg, key)
		if !ok {
			skipped = append(skipped, fmt.Sprintf("backend %s removed: not in the configuration", key))
			continue
		}
		cfg = withoutBackend(cfg, at)
	}
	for _, a := range st.Added {
		ref, ok := listenerServiceRef(cfg, a.Service)
		if !ok {
			skipped = append(skipped, fmt.Sprintf("backend %s:%d added to %s: no such service", a.Address, a.Port, a.Service))
			continue
		}
		next, err := withBackend(cfg, ref, adminapi.BackendSpec{Address: a.Address, Port: a.Port, HTTPS: a.HTTPS,
			Weight: a.Weight, Priority: a.Priority, ConnLimit: a.ConnLimit})
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("backend %s:%d added to %s: %v", a.Address, a.Port, a.Service, err))
			continue
		}
		cfg = next
	}
	for _, set := range st.Settings {
		at, ok := locateBackend(cfg, set.Backend)
		if !ok {
			skipped = append(skipped, fmt.Sprintf("settings of backend %s: not in the configuration", set.Backend))
			continue
		}
		cfg = withBackendSettings(cfg, at, set)
	}
	for _, ll := range st.LogLevels {
		li := -1
		if ll.Listener != "" {
			if li = listenerByKey(cfg, ll.Listener); li < 0 {
				skipped = append(skipped, fmt.Sprintf("log level %q of listener %s: no such listener", ll.Level, ll.Listener))
				continue
			}
		}
		next, err := withLogLevel(cfg, li, ll.Level)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("log level %q: %v", ll.Level, err))
			continue
		}
		cfg = next
	}
	return cfg, skipped
}

// listenerServiceRef finds a listener's service by its identity.
func listenerServiceRef(cfg *config.Config, key string) (adminapi.Ref, bool) {
	scope, idx, name, ok := parseServiceKey(key)
	if !ok || !strings.HasPrefix(scope, "l") {
		return adminapi.Ref{}, false
	}
	li, err := strconv.Atoi(scope[1:])
	if err != nil || li < 0 || li >= len(cfg.Listeners) {
		return adminapi.Ref{}, false
	}
	svcs := cfg.Listeners[li].Services
	if idx >= len(svcs) || svcs[idx].Name != name {
		return adminapi.Ref{}, false
	}
	return adminapi.Ref{Listener: li, Service: idx, Backend: -1}, true
}

func listenerByKey(cfg *config.Config, key string) int {
	for i, k := range bindKeys(cfg.Listeners) {
		if k == key {
			return i
		}
	}
	return -1
}

// Reload re-reads the configuration file through Options.Load.
func (e *Engine) Reload() error {
	if e.opts.Load == nil {
		return fmt.Errorf("reload: no configuration file: %w", adminapi.ErrInvalid)
	}
	restoreGC := RaiseGCForBuild()
	cfg, err := e.opts.Load()
	if err == nil {
		err = e.Apply(cfg)
	}
	restoreGC()
	if err != nil {
		e.reloads[1].Add(1)
		e.opts.Log.WithFields(ErrorFields(err)).Errorf("reload failed, keeping the running configuration: %v", err)
		e.event(adminapi.Event{Kind: adminapi.EventReload, Detail: "failed, the running configuration stays: " + err.Error()})
		return err
	}
	e.reloads[0].Add(1)
	go ReturnBuildGarbage()
	e.opts.Log.Info("configuration reloaded")
	e.event(adminapi.Event{Kind: adminapi.EventReload, Detail: "configuration reloaded"})
	return nil
}

// sessionTarget resolves a session-editing ref and optional backend.
func (e *Engine) sessionTarget(ref adminapi.Ref, bi int) (*service.Service, *backend.Backend, error) {
	s, err := e.lookup(ref)
	if err != nil {
		return nil, nil, err
	}
	if s.Sessions == nil {
		return nil, nil, fmt.Errorf("service has no sessions: %w", adminapi.ErrInvalid)
	}
	if bi < 0 {
		return s, nil, nil
	}
	b, err := backendAt(s, bi)
	return s, b, err
}

func lastSeen(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// AddSession inserts or re-points a session.
func (e *Engine) AddSession(ref adminapi.Ref, sp adminapi.SessionSpec) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, b, err := e.sessionTarget(ref, sp.Backend)
	if err != nil {
		return err
	}
	if sp.Static {
		s.Sessions.StoreAt([]byte(sp.Key), b, time.Time{}) // zero time: never expires
		return nil
	}
	s.Sessions.StoreAt([]byte(sp.Key), b, lastSeen(sp.LastSeen))
	return nil
}

// MoveSession points an existing session at another backend.
func (e *Engine) MoveSession(ref adminapi.Ref, sp adminapi.SessionSpec) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, b, err := e.sessionTarget(ref, sp.Backend)
	if err != nil {
		return err
	}
	last := lastSeen(sp.LastSeen)
	if sp.Static {
		last = time.Time{} // zero time: never expires
	}
	if !s.Sessions.Move(sp.Key, b, last) {
		return fmt.Errorf("session %q: %w", sp.Key, adminapi.ErrNotFound)
	}
	return nil
}

// DeleteSession removes one session.
func (e *Engine) DeleteSession(ref adminapi.Ref, key string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, _, err := e.sessionTarget(ref, -1)
	if err != nil {
		return err
	}
	if !s.Sessions.Delete(key) {
		return fmt.Errorf("session %q: %w", key, adminapi.ErrNotFound)
	}
	return nil
}

// FlushSessions removes a service's sessions, or those of one backend.
func (e *Engine) FlushSessions(ref adminapi.Ref) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, b, err := e.sessionTarget(ref, ref.Backend)
	if err != nil {
		return err
	}
	if b != nil {
		s.Sessions.DeleteValue(b)
		return nil
	}
	s.Sessions.Flush()
	return nil
}

// SyncSessions replaces a service's table; every backend is checked
// before anything is flushed, so a bad entry changes nothing.
func (e *Engine) SyncSessions(ref adminapi.Ref, list []adminapi.SessionSpec) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, _, err := e.sessionTarget(ref, -1)
	if err != nil {
		return err
	}
	bs := make([]*backend.Backend, len(list))
	for i, sp := range list {
		if bs[i], err = backendAt(s, sp.Backend); err != nil {
			return fmt.Errorf("session %q backend %s: %w", sp.Key, strconv.Itoa(sp.Backend), err)
		}
	}
	s.Sessions.Flush()
	for i, sp := range list {
		if sp.Static {
			s.Sessions.StoreAt([]byte(sp.Key), bs[i], time.Time{})
			continue
		}
		s.Sessions.StoreAt([]byte(sp.Key), bs[i], lastSeen(sp.LastSeen))
	}
	return nil
}
