// Package engine owns lbd's object graph: it builds the runtime listeners,
// services and backends from a config, binds the sockets, runs the health
// prober, reloads a new config in place (keeping backend state and
// sessions by identity), and shuts everything down.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/acmecert"
	"lbd/adminapi"
	"lbd/backend"
	"lbd/config"
	"lbd/handoff"
	"lbd/proxy"
)

// Options are the process-level settings the engine needs.
type Options struct {
	Log       *logrus.Logger
	AccessOut io.Writer // request log sink
	Prefix    string    // request log line prefix ("lbd: " on stderr)
	// Load re-reads the configuration file for Reload (control API).
	Load func() (*config.Config, error)
	// DNSRewrite maps a name server's address before dynamic backends
	// query it (resolver.FakeDNS); nil = none.
	DNSRewrite func(network string, server netip.AddrPort) netip.AddrPort
	// Inherit holds the sockets passed to the process (systemd socket
	// activation, binary upgrade); listeners take theirs from it before
	// binding. nil = none.
	Inherit *Inherited
	// Restore is the runtime state of the lbd this one replaces, applied
	// before the first connection is accepted. nil = none.
	Restore *handoff.State
	// Cluster, when set, is told of every control change and reload
	// (see ApplyChange for the way back); nil without a Cluster section.
	Cluster adminapi.Cluster
	// Listen, when set, opens the TCP listening sockets lbd binds
	// itself (lbd runs it where CAP_NET_BIND_SERVICE is kept after the
	// privilege drop, so that a reload can add a listener on a port
	// below 1024); nil = lc.Listen.
	Listen func(lc *net.ListenConfig, network, address string) (net.Listener, error)
	// ACMEOwner, when set, is the user the ACME storage directory is
	// given to (lbd's User and Group). DeferACME leaves the automatic
	// certificates' background work (orders, renewals: they write the
	// storage) to StartACME, which lbd calls once it dropped its
	// privileges; Start only loads the stored certificates.
	ACMEOwner *acmecert.Owner
	DeferACME bool
	// ControlSockets: the process serves control sockets, through which
	// the dashboard (and its history and timeline) can be seen.
	ControlSockets bool
}

// Engine runs one configuration at a time.
type Engine struct {
	opts Options

	mu      sync.Mutex // serialises Start, Reload and control mutations
	g       *graph
	servers []*server
	prober  *backend.Prober
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started time.Time
	control http.Handler // Pound API for Control backends in services
	dash    http.Handler // the dashboard for Dashboard backends
	dyn     *dynamic     // DNS state of the dynamic backends
	// runtime journals what the control API changed in the running
	// configuration since the file was read, for a binary upgrade.
	runtime runtimeJournal
	// obs is the dashboard's timeline and graph history.
	obs *adminapi.Observer
	// stopping is set when Shutdown, Close or a handover begins: from
	// then on no rebuild binds a socket or swaps the graph.
	stopping bool
	// reloads counts Reload's results, [0] success and [1] failure
	// (lbd_reloads_total); atomics, as State reads them without mu.
	reloads [2]atomic.Uint64
	// upgraded: this process took over from a previous one by a binary
	// upgrade (lbd_started_by_upgrade).
	upgraded atomic.Bool
	// upgrades counts the binary upgrades that led to this process, as
	// handed over by the previous one (lbd_upgrades_total).
	upgrades atomic.Uint64
	// acme is the automatic certificates' manager (acme.go; nil
	// without an ACMEAccount), acmeFresh the one New checked for Start.
	acme      *acmeRun
	acmeFresh *acmecert.Manager
}

// server is one bound listening socket and its proxy server.
type server struct {
	key  string // bind identity, kept across reloads when unchanged
	name string // the listener's name
	ln   net.Listener
	raw  net.Listener // the socket under ln (ln wraps it for TLS)
	srv  *proxy.Server
}

// New builds the runtime graph for cfg; nothing is bound yet.
func New(cfg *config.Config, opts Options) (*Engine, error) {
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	e := &Engine{opts: opts, dyn: newDynamic(opts.Log, opts.DNSRewrite), obs: adminapi.NewObserver()}
	g, err := build(cfg, nil, opts.Log, e.dyn, buildOptions{events: e.obs.Events})
	if err != nil {
		return nil, err
	}
	e.g = g
	e.attach(e.g)
	if cfg.ACME != nil {
		if e.acmeFresh, err = newManager(cfg, e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Start binds every listener in config order (SocketFrom senders hand the
// sockets over one after another), starts serving and the prober.
func (e *Engine) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.started = time.Now()
	keys := bindKeys(e.g.cfg.Listeners)
	for i, l := range e.g.cfg.Listeners {
		ln, raw, err := e.bind(l, keys[i])
		if err != nil {
			e.closeAll()
			if e.acmeFresh != nil {
				e.acmeFresh.Close()
				e.acmeFresh = nil
			}
			return atStatement(l.Pos, "listener "+strconv.Itoa(i), err)
		}
		s := &server{key: keys[i], name: l.Name, ln: ln, raw: raw, srv: proxy.NewServer(e.g.listeners[i])}
		e.servers = append(e.servers, s)
	}
	run, _, err := e.setupACME(e.g.cfg, e.servers, nil, e.acmeFresh)
	e.acmeFresh = nil
	if err != nil {
		e.closeAll()
		return err
	}
	e.acme = run
	applyACME(run, e.g, e.servers)
	configureTLS(e.servers, e.g.cfg, e.opts.Log)
	if e.opts.Restore != nil {
		e.restoreLocked(e.opts.Restore)
		e.event(adminapi.Event{Kind: adminapi.EventUpgrade, Detail: "this process took over from the previous binary"})
	}
	for _, s := range e.servers {
		e.serve(s)
	}
	if run != nil && !e.opts.DeferACME {
		run.m.Start() // in the background: the listeners serve already
	}
	e.prober = backend.NewProber(backend.ProberConfig{
		Interval: time.Duration(e.g.cfg.Timeouts.Alive),
		// zproxy's monitor also takes live backends down; Pound only
		// probes the dead ones (and kills on a failed real connect).
		CheckAlive: e.g.cfg.Dialect == config.DialectZproxy,
	})
	for _, b := range e.g.backends {
		e.prober.Add(b)
	}
	e.prober.Start(ctx)
	e.wg.Add(2)
	go e.sweepSessions(ctx)
	go e.dynamicRebuilds(ctx)
	e.syncDynamic(e.g)
	if e.opts.Restore != nil {
		e.restoreMatrices(e.opts.Restore.DisabledMatrices)
	}
	e.dyn.start(ctx)
	// The sampler reads Summary, which takes e.mu: it is not in e.wg,
	// which stop waits for with the lock held; ctx ends it.
	if e.obs != nil {
		go e.obs.Run(ctx, e)
	}
	return nil
}

// ReturnBuildGarbage collects now and gives the freed memory back to the
// system. Parsing and building a configuration leave garbage several
// times the size of what they keep (the parse tree, every service's
// compile), and the runtime would otherwise hold those pages until its
// background scavenger gets to them: at 10,000 services that was most
// of lbd's RSS (issue 36). lbd runs it in the background once it has
// started (every socket open) and after a reload, never on the request
// path.
func ReturnBuildGarbage() { debug.FreeOSMemory() }

// syncDynamic points the dynamic state at g's matrices (and the
// Resolver section's settings, which only matter when there are some).
func (e *Engine) syncDynamic(g *graph) {
	if len(g.matrices) > 0 {
		e.dyn.setResolver(g.cfg.Resolver)
	}
	e.dyn.sync(g.matrices)
}

// dynamicRebuilds rebuilds the graph whenever a lookup changed what a
// matrix expands to. It is a reload of the same configuration: backends
// that stay keep their state, and the new set is swapped in atomically.
func (e *Engine) dynamicRebuilds(ctx context.Context) {
	defer e.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.dyn.changed:
		}
		e.mu.Lock()
		err := e.rebuildLocked(e.g.cfg)
		e.mu.Unlock()
		if err != nil && !errors.Is(err, ErrStopped) {
			e.opts.Log.Errorf("dynamic backends: %v", err)
		}
	}
}

func (e *Engine) serve(s *server) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, proxy.ErrServerClosed) {
			e.opts.Log.Errorf("listener %s: %v", s.ln.Addr(), err)
		}
	}()
}

func (e *Engine) closeAll() {
	for _, s := range e.servers {
		s.ln.Close()
	}
	e.servers = nil
}

// Shutdown stops accepting and lets requests in flight finish until ctx
// ends (Pound's Grace), then closes everything.
func (e *Engine) Shutdown(ctx context.Context) error {
	servers := e.beginStop()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.srv.Shutdown(ctx)
		}()
	}
	wg.Wait()
	e.stop()
	return ctx.Err()
}

// Close stops everything at once (SIGTERM).
func (e *Engine) Close() {
	for _, s := range e.beginStop() {
		s.srv.Close()
	}
	e.stop()
}

// ErrStopped refuses a change that would rebuild the graph once the
// engine stops: it would bind and serve sockets nobody closes.
var ErrStopped = fmt.Errorf("lbd is stopping: %w", adminapi.ErrConflict)

// beginStop marks the engine stopping and returns its servers, which
// then stay the last set.
func (e *Engine) beginStop() []*server {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopping = true
	return e.servers
}

// stop ends the engine's goroutines and detaches the graph; beginStop
// has run, so the graph is the last one.
func (e *Engine) stop() {
	e.mu.Lock()
	cancel, prober, g, run := e.cancel, e.prober, e.g, e.acme
	e.mu.Unlock()
	if run != nil {
		run.m.Close()
	}
	if cancel != nil {
		cancel()
	}
	if prober != nil {
		prober.Stop()
	}
	e.wg.Wait()
	e.dyn.wait()
	for _, d := range g.detach {
		d()
	}
}

// Addrs returns the bound listener addresses in config order.
func (e *Engine) Addrs() []net.Addr {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []net.Addr
	for _, s := range e.servers {
		out = append(out, s.ln.Addr())
	}
	return out
}

// Config returns the configuration in use.
func (e *Engine) Config() *config.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.g.cfg
}

// sweepSessions expires idle sessions of the current graph once a second
// (lookups also drop expired entries; this bounds memory for keys that
// are never seen again).
func (e *Engine) sweepSessions(ctx context.Context) {
	defer e.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			e.mu.Lock()
			g := e.g
			e.mu.Unlock()
			for _, list := range append(g.services, g.global) {
				for _, s := range list {
					if s.Sessions != nil {
						s.Sessions.Sweep(now)
					}
				}
			}
		}
	}
}
