package engine

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/resolver"
)

// dynamic keeps what the DNS said about every matrix (Pound's dynamic
// backends) and asks for a graph rebuild when a set of addresses
// changes. Each matrix, and each target of an SRV matrix, is looked up
// by its own goroutine, again when its TTL expires. The data path never
// sees this state: the rebuilt graph carries the backends made from it,
// published through the usual atomic swaps.
type dynamic struct {
	log     logrus.FieldLogger
	rewrite func(string, netip.AddrPort) netip.AddrPort

	mu       sync.Mutex
	res      *resolver.Resolver
	rcfg     config.Resolver // what res was built from
	retry    time.Duration   // the Resolver's RetryInterval
	matrices map[string]*matrix
	ctx      context.Context // nil until start
	wg       sync.WaitGroup

	// changed holds a token while a rebuild is wanted; several changes
	// before the engine gets to it make one rebuild.
	changed chan struct{}
}

// matrix is the run-time state of one dynamic backend.
type matrix struct {
	cb       *config.Backend // the template
	cancel   context.CancelFunc
	disabled bool          // the operator disabled it: no lookups, no backends
	expire   time.Time     // when the next lookup runs
	addrs    []netip.Addr  // first, all: the addresses, in order of appearance
	targets  []*srvTarget  // srv: one per record, in order of appearance
	retry    time.Duration // the template's RetryInterval, or 0
}

// srvTarget is one SRV record of a matrix, resolved like Resolve all.
type srvTarget struct {
	host              string
	port              uint16
	priority          int // the record's priority: the balancer group
	weight, maxWeight int // its weight, and the largest of its priority
	addrs             []netip.Addr
	cancel            context.CancelFunc
}

// child is one backend a matrix makes.
type child struct {
	addr  netip.AddrPort
	group int
	srv   bool
	// weight and maxWeight are the SRV record's, for the priority rule.
	weight, maxWeight int
}

// Lookup bounds: TTLs below a second would spin, and a lookup may take
// at most lookupTimeout whatever the resolv.conf says.
const (
	minTTL        = time.Second
	lookupTimeout = time.Minute
	maxAddrs      = 256 // addresses kept per name
	maxTargets    = 256 // SRV records kept per matrix
)

func newDynamic(log logrus.FieldLogger, rewrite func(string, netip.AddrPort) netip.AddrPort) *dynamic {
	return &dynamic{log: log, rewrite: rewrite, matrices: map[string]*matrix{}, changed: make(chan struct{}, 1)}
}

// setResolver builds the resolver for rc (nil = defaults) unless the one
// in use was built from the same settings.
func (d *dynamic) setResolver(rc *config.Resolver) {
	if rc == nil {
		rc = config.DefaultResolver()
	}
	want := *rc
	want.Pos = config.Locus{}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.res != nil && d.rcfg == want {
		return
	}
	// The resolver's messages name the Resolver section that set it up
	// (none for the defaults); a reload that moves the same settings
	// keeps the resolver, and the position it was built from.
	log := d.log.WithFields(StatementSource(rc.Pos))
	text := want.ConfigText
	if want.ConfigText == "" && want.ConfigFile == "" {
		data, err := os.ReadFile("/etc/resolv.conf")
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Warnf("resolver: %v", err)
		}
		text = string(data)
	}
	conf, warns := resolver.ParseConf(text)
	for _, w := range warns {
		log.Warnf("resolver configuration: %s", w)
	}
	d.res = resolver.New(resolver.Options{Conf: conf, CNAMEChain: want.CNAMEChain, Rewrite: d.rewrite,
		Debug: want.Debug, Log: log})
	d.rcfg, d.retry = want, time.Duration(want.RetryInterval)
}

// signal asks for a rebuild.
func (d *dynamic) signal() {
	select {
	case d.changed <- struct{}{}:
	default: // one is pending already
	}
}

// start runs the lookups of every known matrix until ctx ends.
func (d *dynamic) start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctx = ctx
	for _, m := range d.matrices {
		d.launchLocked(m)
	}
}

// wait returns once every lookup goroutine has ended (after ctx did).
func (d *dynamic) wait() { d.wg.Wait() }

// sync makes the state hold exactly the matrices of a new graph:
// unchanged ones keep their addresses, new ones start looking up.
func (d *dynamic) sync(ms map[string]*config.Backend) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, m := range d.matrices {
		if ms[k] == nil {
			m.stopLocked()
			delete(d.matrices, k)
		}
	}
	for k, cb := range ms {
		if m := d.matrices[k]; m != nil {
			m.cb = cb
			continue
		}
		m := &matrix{cb: cb, retry: time.Duration(cb.Rare().RetryInterval)}
		d.matrices[k] = m
		d.launchLocked(m)
	}
}

// launchLocked starts m's lookups if the engine runs.
func (d *dynamic) launchLocked(m *matrix) {
	if d.ctx == nil || m.disabled || m.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(d.ctx)
	m.cancel = cancel
	d.wg.Add(1)
	go d.run(ctx, func(ctx context.Context) time.Duration { return d.refresh(ctx, m) })
}

// stopLocked ends m's lookups and forgets what they found.
func (m *matrix) stopLocked() {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
	for _, t := range m.targets {
		t.cancel()
	}
	m.addrs, m.targets, m.expire = nil, nil, time.Time{}
}

// run calls lookup at once and then again after the delay it returns,
// until ctx ends.
func (d *dynamic) run(ctx context.Context, lookup func(context.Context) time.Duration) {
	defer d.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(lookup(ctx))
	}
}

// setEnabled is the control API's enable/disable of a matrix: disabling
// drops its backends, enabling looks the name up again at once.
func (d *dynamic) setEnabled(key string, on bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.matrices[key]
	if m == nil || m.disabled == !on {
		return m != nil
	}
	m.disabled = !on
	if on {
		d.launchLocked(m)
	} else {
		m.stopLocked()
	}
	d.signal()
	return true
}

// disabledKeys lists the matrices an operator disabled, sorted.
func (d *dynamic) disabledKeys() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k, m := range d.matrices {
		if m.disabled {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// view is what the builder and the control API need of one matrix.
type matrixView struct {
	children []child
	disabled bool
	expire   time.Time
}

// view returns the current expansion of the matrix under key.
func (d *dynamic) view(key string) matrixView {
	if d == nil {
		return matrixView{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.matrices[key]
	if m == nil {
		return matrixView{}
	}
	v := matrixView{disabled: m.disabled, expire: m.expire}
	port := uint16(m.cb.Port)
	for _, a := range m.addrs {
		v.children = append(v.children, child{addr: netip.AddrPortFrom(a, port)})
	}
	for _, t := range m.targets {
		for _, a := range t.addrs {
			v.children = append(v.children, child{addr: netip.AddrPortFrom(a, t.port), group: t.priority,
				srv: true, weight: t.weight, maxWeight: t.maxWeight})
		}
	}
	return v
}

// merge returns old's addresses still in next, in their order, then
// next's new ones (at most maxAddrs), and whether the set changed.
func merge(old, next []netip.Addr) ([]netip.Addr, bool) {
	var out []netip.Addr
	for _, a := range old {
		if slices.Contains(next, a) {
			out = append(out, a)
		}
	}
	kept := len(out)
	for _, a := range next {
		if len(out) < maxAddrs && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, kept != len(old) || len(out) != kept
}
