package engine

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"lbd/config"
	"lbd/resolver"
)

// family maps Pound's Family to the resolver's.
func family(f string) resolver.Family {
	switch f {
	case "inet":
		return resolver.Inet
	case "inet6":
		return resolver.Inet6
	}
	return resolver.Any
}

// ttl is how long an answer is used: OverrideTTL when set, never below
// minTTL.
func ttl(got time.Duration, cb *config.Backend) time.Duration {
	if cb.Rare().OverrideTTL > 0 {
		got = time.Duration(cb.Rare().OverrideTTL)
	}
	return max(got, minTTL)
}

// retryAfter is the delay after a failed or empty lookup.
func (d *dynamic) retryAfter(m *matrix) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.retry > 0 {
		return m.retry
	}
	return max(d.retry, minTTL)
}

func (d *dynamic) current() *resolver.Resolver {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.res
}

// lookupAddrs resolves name as a Resolve all matrix does. ok is false
// after a temporary failure: the caller keeps what it had. A name with
// no records yields no addresses, as in Pound.
func (d *dynamic) lookupAddrs(ctx context.Context, m *matrix, name string) (addrs []netip.Addr, wait time.Duration, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ans, err := d.current().LookupAddrs(ctx, name, family(m.cb.Rare().Family))
	switch {
	case err == nil:
		return ans.Addrs, ttl(ans.TTL, m.cb), true
	case errors.Is(err, resolver.ErrNotFound):
		return nil, d.retryAfter(m), true
	}
	if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		d.log.Warnf("dynamic backend %s: %v", name, err)
	}
	return nil, d.retryAfter(m), false
}

// refresh looks m up once and returns when to do it again.
func (d *dynamic) refresh(ctx context.Context, m *matrix) time.Duration {
	if m.cb.Rare().Resolve == config.ResolveSRV {
		return d.refreshSRV(ctx, m)
	}
	addrs, wait, ok := d.lookupAddrs(ctx, m, m.cb.Address)
	if m.cb.Rare().Resolve == config.ResolveFirst && len(addrs) > 1 {
		addrs = addrs[:1]
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ctx.Err() != nil {
		return wait // stopped meanwhile: what was found is not wanted
	}
	m.expire = time.Now().Add(wait)
	if !ok {
		return wait
	}
	var changed bool
	if m.addrs, changed = merge(m.addrs, addrs); changed {
		d.signal()
	}
	return wait
}

// refreshSRV reads m's SRV records: a target that appears gets its own
// lookups, one that disappears takes its backends with it.
func (d *dynamic) refreshSRV(ctx context.Context, m *matrix) time.Duration {
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	ans, err := d.current().LookupSRV(lctx, m.cb.Address)
	cancel()
	wait := ttl(ans.TTL, m.cb)
	switch {
	case errors.Is(err, resolver.ErrNotFound):
		wait = d.retryAfter(m)
	case err != nil:
		d.log.Warnf("dynamic backend %s: %v", m.cb.Address, err)
		wait = d.retryAfter(m)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ctx.Err() != nil {
		return wait
	}
	m.expire = time.Now().Add(wait)
	if err != nil && !errors.Is(err, resolver.ErrNotFound) {
		return wait
	}
	if d.setTargetsLocked(ctx, m, ans.Records) {
		d.signal()
	}
	return wait
}

// setTargetsLocked makes m's targets those of recs and reports whether
// anything its backends depend on changed.
func (d *dynamic) setTargetsLocked(ctx context.Context, m *matrix, recs []resolver.SRV) bool {
	maxW := map[uint16]int{}
	for _, r := range recs {
		maxW[r.Priority] = max(maxW[r.Priority], int(r.Weight))
	}
	old := map[string]*srvTarget{}
	for _, t := range m.targets {
		old[targetKey(t.host, t.port)] = t
	}
	changed := false
	var next []*srvTarget
	for _, r := range recs {
		k := targetKey(r.Target, r.Port)
		t := old[k]
		if t == nil && len(next) >= maxTargets {
			continue
		}
		if t == nil {
			t = &srvTarget{host: r.Target, port: r.Port}
			d.launchTarget(ctx, m, t)
		}
		delete(old, k)
		nw := srvTarget{priority: int(r.Priority), weight: int(r.Weight), maxWeight: maxW[r.Priority]}
		if t.priority != nw.priority || t.weight != nw.weight || t.maxWeight != nw.maxWeight {
			t.priority, t.weight, t.maxWeight = nw.priority, nw.weight, nw.maxWeight
			changed = changed || len(t.addrs) > 0
		}
		if !containsTarget(next, t) {
			next = append(next, t)
		}
	}
	for _, t := range old {
		t.cancel()
		changed = changed || len(t.addrs) > 0
	}
	m.targets = keepOrder(m.targets, next)
	return changed
}

// keepOrder lists next's targets with the old ones first, in their old
// order, so that backends keep their place in the control API's list.
func keepOrder(old, next []*srvTarget) []*srvTarget {
	var out []*srvTarget
	for _, t := range old {
		if containsTarget(next, t) {
			out = append(out, t)
		}
	}
	for _, t := range next {
		if !containsTarget(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func containsTarget(ts []*srvTarget, t *srvTarget) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func targetKey(host string, port uint16) string {
	return strings.ToLower(host) + ":" + strconv.Itoa(int(port))
}

// launchTarget starts the lookups of one SRV target, ended with the
// matrix (ctx) or when the record goes away (t.cancel).
func (d *dynamic) launchTarget(ctx context.Context, m *matrix, t *srvTarget) {
	tctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	d.wg.Add(1)
	go d.run(tctx, func(ctx context.Context) time.Duration {
		addrs, wait, ok := d.lookupAddrs(ctx, m, t.host)
		d.mu.Lock()
		defer d.mu.Unlock()
		if ok && ctx.Err() == nil {
			var changed bool
			if t.addrs, changed = merge(t.addrs, addrs); changed {
				d.signal()
			}
		}
		return wait
	})
}
