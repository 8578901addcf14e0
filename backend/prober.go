package backend

import (
	"context"
	"sync"
	"time"
)

// DefaultAlive is Pound's default health-check interval (Alive 30).
const DefaultAlive = 30 * time.Second

// ProberConfig configures a Prober.
type ProberConfig struct {
	// Interval is Pound's Alive: how often dead backends are probed.
	// 0 = DefaultAlive.
	Interval time.Duration
	// CheckAlive also probes live backends and marks them dead when the
	// probe fails: zproxy's monitor. Classic Pound does this only for
	// backends with an HAport, which happens regardless of this flag.
	CheckAlive bool
}

// Prober is the health checker. Every Interval it starts a TCP connect probe
// (within the backend's ConnTO, to HAPort or the backend address) for each
// enabled backend that needs one, and resurrects a dead backend the moment
// its probe connects. Probes run in their own goroutines, at most one per
// backend (even across Probers, which overlap during a reload), so a
// blackholed backend never delays the others or the traffic.
type Prober struct {
	cfg ProberConfig

	mu      sync.Mutex
	set     map[*Backend]struct{}
	ctx     context.Context // nil until Start
	cancel  context.CancelFunc
	stopped bool
	loop    chan struct{} // closed when the ticker goroutine exits
	wg      sync.WaitGroup
	ticks   <-chan time.Time // tests drive rounds by hand; nil = ticker
	onRound func()           // tests: called after each ticked round
	// first is closed once every probe of Start's round has ended.
	first chan struct{}
}

// NewProber returns a Prober that does nothing until Start.
func NewProber(cfg ProberConfig) *Prober {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultAlive
	}
	return &Prober{cfg: cfg, set: make(map[*Backend]struct{}), first: make(chan struct{})}
}

// FirstRound is closed once the probes of the round Start runs at once
// have ended (at once if there were none), or the Prober stopped: from
// then on the alive flags say what the checks found, which is when a
// service manager may be told lbd is ready.
func (p *Prober) FirstRound() <-chan struct{} { return p.first }

// Add puts backends under watch (on start and on reload). A dead one is
// probed at once if the Prober runs, rather than an interval later.
func (p *Prober) Add(bs ...*Backend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range bs {
		p.set[b] = struct{}{}
		if !b.Alive() && b.Enabled() {
			p.launchLocked(b)
		}
	}
}

// Remove stops watching backends; a probe already in flight still finishes.
func (p *Prober) Remove(bs ...*Backend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range bs {
		delete(p.set, b)
	}
}

// Watches reports whether b is under watch (for the engine's checks
// that a removed backend is no longer probed).
func (p *Prober) Watches(b *Backend) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.set[b]
	return ok
}

// Start runs the probe loop until ctx ends or Stop is called, beginning with
// one round at once (zproxy probes new backends immediately). Calling Start
// twice does nothing.
func (p *Prober) Start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx != nil || p.stopped {
		return
	}
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.loop = make(chan struct{})
	go p.run(p.ctx, p.loop)
	var round sync.WaitGroup
	p.roundLocked(&round)
	go func() {
		round.Wait()
		close(p.first)
	}()
}

// Stop ends the loop, cancels the probes in flight and waits for all of
// them, so no goroutine outlives it. The Prober cannot be restarted.
func (p *Prober) Stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	if p.cancel != nil {
		p.cancel()
	}
	loop := p.loop
	p.mu.Unlock()
	if loop != nil {
		<-loop
	}
	p.wg.Wait()
}

// Check starts a probe of b now unless one is in flight or the Prober is
// not running, and reports whether it started one. The engine calls it
// when the API re-enables a backend (zproxy probes it at once).
func (p *Prober) Check(b *Backend) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.launchLocked(b)
}

func (p *Prober) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	ticks := p.ticks
	if ticks == nil {
		t := time.NewTicker(p.cfg.Interval)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			p.mu.Lock()
			p.roundLocked(nil)
			p.mu.Unlock()
			if p.onRound != nil {
				p.onRound()
			}
		}
	}
}

// roundLocked is one tick: reap idle conns, probe whoever needs it.
// round, if not nil, counts the probes started.
func (p *Prober) roundLocked(round *sync.WaitGroup) {
	for b := range p.set {
		b.ReapIdle()
		if p.wants(b) {
			p.launch(b, round)
		}
	}
}

// wants reports whether b needs a probe this round. Disabled backends are
// never probed (zproxy); live ones only with CheckAlive, an HAport or a
// gRPC health check
// (classic Pound kills a live backend whose HAport stops answering).
func (p *Prober) wants(b *Backend) bool {
	if !b.Enabled() {
		return false
	}
	return !b.Alive() || p.cfg.CheckAlive || b.hasHA || b.grpcCheck
}

// launchLocked starts one probe goroutine for b if none is in flight. The
// caller holds p.mu, which orders wg.Add before Stop's wg.Wait.
func (p *Prober) launchLocked(b *Backend) bool { return p.launch(b, nil) }

// launch is launchLocked; round, if not nil, is done when the probe ends.
func (p *Prober) launch(b *Backend, round *sync.WaitGroup) bool {
	if p.ctx == nil || p.stopped || !b.probing.CompareAndSwap(false, true) {
		return false
	}
	p.wg.Add(1)
	if round != nil {
		round.Add(1)
	}
	go func(ctx context.Context) {
		defer p.wg.Done()
		if round != nil {
			defer round.Done()
		}
		defer b.probing.Store(false)
		err := b.Probe(ctx)
		switch {
		case err == nil:
			b.SetAlive(true, "")
		case ctx.Err() != nil:
			// Stopped mid-probe: that says nothing about the backend.
		case b.Alive() && p.wants(b):
			b.SetAlive(false, "probe: "+err.Error())
		}
	}(p.ctx)
	return true
}

// Probe connects to the backend's probe address within ConnTO and closes
// the connection again; the connect latency feeds ConnectTime (zproxy's
// monitor sample). It does not change the alive state: the Prober does.
// Its result and duration are counted (lbd_backend_health_check_*)
// unless parent ended first, which says nothing about the backend.
func (b *Backend) Probe(parent context.Context) error {
	if b.grpcCheck && b.HTTP2() != nil {
		return b.probeGRPC(parent)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, b.connTO)
	defer cancel()
	nc, err := b.dial(ctx, b.probeNetwork(), b.probeAddress())
	d := time.Since(start)
	if parent.Err() == nil {
		b.probed(d, err == nil)
	}
	if err != nil {
		return err
	}
	b.connected(d)
	return nc.Close()
}
