package engine

import (
	"context"
	"time"

	"lbd/adminapi"
	"lbd/config"
	"lbd/proxy"
)

// Apply switches to cfg without dropping traffic: listeners whose socket
// is unchanged keep it (and their connections), new ones are bound, gone
// ones drain for Grace; backend state and sessions carry over by identity.
// If a new socket cannot be bound nothing changes.
func (e *Engine) Apply(cfg *config.Config) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	// The file is in force again: what the control API had changed is
	// gone (the backends get the file's weights), and a binary upgrade
	// must not bring it back. A failed reload keeps all of it.
	if err := e.reloadLocked(cfg, buildOptions{events: e.events()}); err != nil {
		return err
	}
	e.runtime = runtimeJournal{}
	return nil
}

// rebuildLocked applies cfg, a change of the running configuration (a
// control API change, DNS): the services keep their enabled flags and
// the backends the settings the control API gave them.
func (e *Engine) rebuildLocked(cfg *config.Config) error {
	return e.reloadLocked(cfg, buildOptions{settings: e.runtime.settings, keepServices: true, events: e.events()})
}

func (e *Engine) reloadLocked(cfg *config.Config, opts buildOptions) error {
	if e.stopping {
		return ErrStopped
	}
	g, err := build(cfg, e.g, e.opts.Log, e.dyn, opts)
	if err != nil {
		return err
	}
	e.attach(g)
	old := map[string]*server{}
	for _, s := range e.servers {
		old[s.key] = s
	}
	next := make([]*server, len(cfg.Listeners))
	var fresh []*server
	keys := bindKeys(cfg.Listeners)
	for i, l := range cfg.Listeners {
		key := keys[i]
		if s, ok := old[key]; ok {
			s.name = l.Name
			next[i] = s
			delete(old, key)
			continue
		}
		ln, raw, err := e.bind(l, key)
		if err != nil {
			for _, s := range fresh {
				s.ln.Close()
			}
			for _, d := range g.detach {
				d()
			}
			return atStatement(l.Pos, "", err)
		}
		s := &server{key: key, name: l.Name, ln: ln, raw: raw, srv: proxy.NewServer(g.listeners[i])}
		next[i], fresh = s, append(fresh, s)
	}
	run, oldRun, err := e.setupACME(cfg, next, e.acme, nil)
	if err != nil {
		for _, s := range fresh {
			s.ln.Close()
		}
		for _, d := range g.detach {
			d()
		}
		return err
	}
	applyACME(run, g, next)
	configureTLS(next, cfg, e.opts.Log)
	for i, s := range next {
		s.srv.Swap(g.listeners[i])
	}
	for _, s := range fresh {
		e.serve(s)
	}
	grace := time.Duration(cfg.Grace)
	for _, s := range old {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			s.srv.Shutdown(ctx)
		}()
	}
	e.syncProber(g)
	retire(e.g, g)
	for _, d := range e.g.detach {
		d()
	}
	e.servers, e.g = next, g
	if run != e.acme {
		e.acme = run
		if run != nil {
			run.started = true
			run.m.Start()
		}
		if oldRun != nil {
			oldRun.m.Close()
		}
	}
	if e.cancel != nil {
		e.syncDynamic(g)
	}
	e.changed(adminapi.Change{Kind: adminapi.ChangeReloaded})
	return nil
}

// syncProber makes the prober watch exactly the new graph's backends.
func (e *Engine) syncProber(g *graph) {
	if e.prober == nil {
		return
	}
	for k, b := range e.g.backends {
		if nb, ok := g.backends[k]; !ok || nb != b {
			e.prober.Remove(b)
		}
	}
	for k, b := range g.backends {
		if ob, ok := e.g.backends[k]; !ok || ob != b {
			e.prober.Add(b)
		}
	}
}

// retire closes the connections of every backend of old that is not the
// same object in next (removed, or replaced because its settings changed).
func retire(old, next *graph) {
	for k, b := range old.backends {
		if nb, ok := next.backends[k]; !ok || nb != b {
			b.Retire()
		}
	}
}
