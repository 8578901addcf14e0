package engine

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"lbd/adminapi"
	"lbd/backend"
	"lbd/config"
	"lbd/handoff"
	"lbd/service"
)

// A binary upgrade hands the running state to the new process: Handoff
// exports it by the identities reloads already use (bind keys, service
// and backend keys), Options.Restore applies it in the new engine before
// its first accept, and Handover drains the old one.

// runtimeJournal records what the control API changed in the running
// configuration (it is not written to the file), in order, so that a new
// process can make the same changes to the file it loads. Reading the
// file again (a reload) forgets them, as the running process does.
type runtimeJournal struct {
	added  []handoff.AddedBackend
	levels []handoff.LogLevel
	// removed are the keys of configured backends removed, in order; a
	// backend added at runtime and removed again leaves added instead.
	removed []string
	// settings are the values set on each backend, by key.
	settings map[string]handoff.BackendSettings
}

// set records values set on the backend with key.
func (j *runtimeJournal) set(key string, v backendValues) {
	if j.settings == nil {
		j.settings = map[string]handoff.BackendSettings{}
	}
	cur := j.settings[key]
	cur.Backend = key
	for _, f := range []struct{ src, dst **int }{{&v.priority, &cur.Priority}, {&v.weight, &cur.Weight}, {&v.connLimit, &cur.ConnLimit}} {
		if *f.src != nil {
			n := **f.src
			*f.dst = &n
		}
	}
	j.settings[key] = cur
}

// remove records the removal of the backend with key: its settings go,
// and so does its addition if it was added at runtime; otherwise it came
// from the file, which a new process must remove it from.
func (j *runtimeJournal) remove(key string) {
	delete(j.settings, key)
	for i := len(j.added) - 1; i >= 0; i-- {
		if addedKey(j.added[i]) == key {
			j.added = append(j.added[:i:i], j.added[i+1:]...)
			return
		}
	}
	j.removed = append(j.removed, key)
}

// addedKey is the key of the backend an AddedBackend made (withBackend
// makes a plain backend, TLS when asked).
func addedKey(a handoff.AddedBackend) string {
	cb := &config.Backend{Address: a.Address, Port: a.Port, HTTPS: a.HTTPS}
	return a.Service + "/" + dialAddress(cb) + tlsTag(cb)
}

// export writes the journal into a handoff state.
func (j *runtimeJournal) export(st *handoff.State) {
	st.Added = append(st.Added, j.added...)
	st.LogLevels = append(st.LogLevels, j.levels...)
	st.Removed = append(st.Removed, j.removed...)
	for _, set := range j.settings {
		st.Settings = append(st.Settings, set)
	}
	slices.SortFunc(st.Settings, func(a, b handoff.BackendSettings) int { return strings.Compare(a.Backend, b.Backend) })
}

// restore makes the journal the one a handoff state carries.
func (j *runtimeJournal) restore(st *handoff.State) {
	*j = runtimeJournal{
		added:   append([]handoff.AddedBackend(nil), st.Added...),
		levels:  append([]handoff.LogLevel(nil), st.LogLevels...),
		removed: append([]string(nil), st.Removed...),
	}
	for _, set := range st.Settings {
		j.set(set.Backend, backendValues{priority: set.Priority, weight: set.Weight, connLimit: set.ConnLimit})
	}
}

// serviceKey is a service's identity, the prefix of its backends' keys.
func serviceKey(scope string, idx int, name string) string {
	return scope + "/" + strconv.Itoa(idx) + ":" + name
}

// parseServiceKey splits a serviceKey.
func parseServiceKey(key string) (scope string, idx int, name string, ok bool) {
	scope, rest, ok := strings.Cut(key, "/")
	if !ok {
		return "", 0, "", false
	}
	num, name, ok := strings.Cut(rest, ":")
	if !ok {
		return "", 0, "", false
	}
	idx, err := strconv.Atoi(num)
	if err != nil || idx < 0 {
		return "", 0, "", false
	}
	return scope, idx, name, true
}

// Socket is one listening socket of the engine, for a handoff.
type Socket struct {
	Key  string // bind identity
	Name string // the listener's name
	Ln   net.Listener
}

// Sockets returns the listening sockets in listener order (the sockets
// themselves, not a TLS wrapper).
func (e *Engine) Sockets() []Socket {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Socket, 0, len(e.servers))
	for _, s := range e.servers {
		out = append(out, Socket{Key: s.key, Name: s.name, Ln: s.raw})
	}
	return out
}

// Handoff exports the runtime state (everything but the sockets, which
// the caller describes as it passes them).
func (e *Engine) Handoff() *handoff.State {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &handoff.State{Version: handoff.Version, Upgrades: e.upgrades.Load()}
	for _, s := range e.servers {
		st.Listeners = append(st.Listeners, handoff.Listener{Key: s.key, Enabled: s.srv.Enabled()})
	}
	keys := make(map[*backend.Backend]string, len(e.g.backends))
	for k, b := range e.g.backends {
		keys[b] = k
	}
	export := func(scope string, list []*service.Service) {
		for i, s := range list {
			st.Services = append(st.Services, exportService(serviceKey(scope, i, s.Name), s, keys))
		}
	}
	for li, list := range e.g.services {
		export("l"+strconv.Itoa(li), list)
	}
	export("g", e.g.global)
	e.runtime.export(st)
	st.DisabledMatrices = e.dyn.disabledKeys()
	return st
}

func exportService(key string, s *service.Service, keys map[*backend.Backend]string) handoff.Service {
	hs := handoff.Service{Key: key, Enabled: s.Enabled()}
	for _, en := range s.Listing {
		if b := en.Backend; b != nil {
			hs.Backends = append(hs.Backends, handoff.Backend{Key: keys[b], Enabled: b.Enabled(), Alive: b.Alive()})
		}
	}
	if s.Sessions != nil {
		s.Sessions.Each(func(k string, b *backend.Backend, last time.Time) bool {
			if bk, ok := keys[b]; ok {
				hs.Sessions = append(hs.Sessions, handoff.Session{Key: k, Backend: bk, LastSeen: last})
			}
			return true
		})
	}
	return hs
}

// restoreLocked applies a handed-over state to the freshly built graph,
// before anything is accepted. What the configuration no longer has is
// reported and skipped.
func (e *Engine) restoreLocked(st *handoff.State) {
	log := e.opts.Log
	byKey := map[string]*server{}
	for _, s := range e.servers {
		byKey[s.key] = s
	}
	for _, l := range st.Listeners {
		if s := byKey[l.Key]; s != nil {
			s.srv.SetEnabled(l.Enabled)
		} else {
			log.Warnf("handoff: listener %s is not in the configuration", l.Key)
		}
	}
	restored := 0
	for _, hs := range st.Services {
		scope, idx, name, ok := parseServiceKey(hs.Key)
		s := e.g.findService(scope, idx, name)
		if !ok || s == nil {
			log.Warnf("handoff: service %s is not in the configuration", hs.Key)
			continue
		}
		s.SetEnabled(hs.Enabled)
		for _, hb := range hs.Backends {
			if b := e.g.backends[hb.Key]; b != nil {
				b.SetEnabled(hb.Enabled)
				b.SetAlive(hb.Alive, "as the previous process found it")
			}
		}
		restored += restoreSessions(s, hs, e.g.backends)
	}
	e.runtime.restore(st)
	e.upgraded.Store(true)
	e.upgrades.Store(st.Upgrades + 1)
	log.Infof("handoff: state of pid %d restored (%d sessions)", st.PID, restored)
}

// restoreSessions refills s's table from hs; a session whose backend is
// gone or left the service is dropped, as a reload drops it.
func restoreSessions(s *service.Service, hs handoff.Service, bes map[string]*backend.Backend) int {
	if s.Sessions == nil {
		return 0
	}
	mine := make(map[*backend.Backend]bool, len(s.Listing))
	for _, en := range s.Listing {
		if en.Backend != nil {
			mine[en.Backend] = true
		}
	}
	n := 0
	for _, se := range hs.Sessions {
		b := bes[se.Backend]
		if b == nil || !mine[b] {
			continue
		}
		s.Sessions.StoreAt([]byte(se.Key), b, se.LastSeen) // zero time: never expires
		n++
	}
	return n
}

// restoreMatrices disables the dynamic backends an operator had
// disabled; they exist once the dynamic state follows the graph.
func (e *Engine) restoreMatrices(keys []string) {
	for _, k := range keys {
		if !e.dyn.setEnabled(k, false) {
			e.opts.Log.Warnf("handoff: dynamic backend %s is not in the configuration", k)
		}
	}
}

// Handover stops accepting and drains for the new process that shares
// the sockets: requests in flight finish and answer "Connection: close",
// idle keep-alive connections are closed only after their next response
// (or their Client timeout), until ctx ends; then everything is closed.
// UNIX socket files are left in place: they are the new process's now.
func (e *Engine) Handover(ctx context.Context) error {
	servers := e.StopAccepting()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.srv.Drain(ctx)
		}()
	}
	wg.Wait()
	e.stop()
	return ctx.Err()
}

// StopAccepting is the start of Handover, for the moment the new
// process serves: no more accepts here, and every response says
// "Connection: close". It returns the servers to drain.
func (e *Engine) StopAccepting() []*server {
	servers := e.beginStop()
	e.event(adminapi.Event{Kind: adminapi.EventUpgrade, Detail: "handed the sockets over to a new binary; draining"})
	for _, s := range servers {
		if ul, ok := s.raw.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false)
		}
		s.srv.BeginDrain()
	}
	return servers
}

// Ready is closed once the first round of health checks has ended, so
// that readiness reported to a service manager reflects them.
func (e *Engine) Ready() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.prober == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return e.prober.FirstRound()
}

// Responsive reports whether the engine's lock could be taken within d:
// a watchdog ping only goes out while control operations can proceed.
func (e *Engine) Responsive(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if e.mu.TryLock() {
			e.mu.Unlock()
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}
