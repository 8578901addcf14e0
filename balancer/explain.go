package balancer

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"lbd/backend"
	"lbd/explain"
)

// Explain is a dry-run Pick for the routing explainer: the backend Pick
// would return now and the inputs it decides on (each backend's weight,
// priority, connections and latency, why it is or is not eligible). It
// moves nothing: no round-robin cursor advances, and weighted random
// draws from a generator of its own seeded with seed (the same question
// gets the same answer), never from the one Pick uses. index maps a
// backend to the number the service shows it under. It allocates.
func (b *Balancer) Explain(seed uint64, index func(*backend.Backend) int) explain.Balancer {
	s := b.snap.Load()
	out := explain.Balancer{Algorithm: b.kind.String(), Mode: "pound"}
	if b.mode == ZproxyMode {
		out.Mode, out.ServicePriority = "zproxy", s.priority
	}
	var chosen *backend.Backend
	var why string
	for i, tier := range b.tiers {
		g := &s.groups[i]
		eg := explain.Group{Tier: tier, Emergency: tier == emergencyTier}
		for _, be := range b.all {
			if tierOf(be) == tier {
				eg.Candidates = append(eg.Candidates, b.candidate(s, g, be, index))
			}
		}
		if chosen == nil {
			chosen, why = b.dryPick(g, i, seed)
			eg.Why = "the backend is chosen in this group"
			if chosen == nil {
				eg.Why = "no available backend in this group: the next group is tried"
			}
		} else {
			eg.Why = "not tried: an earlier group has an available backend"
		}
		out.Groups = append(out.Groups, eg)
	}
	if chosen == nil {
		out.Why = "no backend is available: the request would get a 503"
		return out
	}
	n := index(chosen)
	out.Chosen, out.Why = &n, why
	return out
}

// candidate describes be for the explanation.
func (b *Balancer) candidate(s *snapshot, g *group, be *backend.Backend, index func(*backend.Backend) int) explain.Candidate {
	c := explain.Candidate{
		Backend: index(be), ID: be.ID(), Weight: b.weight(be), Priority: be.Priority(),
		Active: be.Active(), Pending: be.Pending(), LatencyNS: int64(be.Latency()), ConnLimit: be.ConnLimit(),
	}
	j := -1
	for k, x := range g.bs {
		if x == be {
			j = k
		}
	}
	if j < 0 {
		c.Reason = b.ineligible(s, be)
		return c
	}
	c.Eligible, c.Available, c.Weight = true, be.Available(), g.w[j]
	if be.Enabled() && be.Alive() && !c.Available {
		c.Reason = "at its ConnLimit"
	}
	switch b.kind {
	case Random:
		var total int64
		for _, w := range g.w {
			total += w
		}
		c.Share = float64(g.w[j]) / float64(total)
	case IWRR, RoundRobin:
		n := 0
		for _, k := range g.ring {
			if int(k) == j {
				n++
			}
		}
		c.Share = float64(n) / float64(len(g.ring))
	case LeastConnections:
		c.Score = strconv.FormatInt(be.Active()+be.Pending(), 10) + "/" + strconv.FormatInt(g.w[j], 10)
	case PendingConnections:
		c.Score = strconv.FormatInt(be.Pending(), 10) + "/" + strconv.FormatInt(g.w[j], 10)
	case ResponseTime:
		if l := be.Latency(); l >= 0 {
			c.Score = l.String() + "/" + strconv.FormatInt(g.w[j], 10)
		} else {
			c.Score = "no sample yet"
		}
	}
	return c
}

// ineligible says why be is not in the balancer's current set.
func (b *Balancer) ineligible(s *snapshot, be *backend.Backend) string {
	switch {
	case !be.Enabled():
		return "disabled"
	case !be.Alive():
		return "dead"
	case b.weight(be) <= 0:
		if b.mode == ZproxyMode {
			return "weight 0"
		}
		return "priority 0 (Pound never picks it)"
	case !be.Emergency() && b.mode == ZproxyMode && be.Priority() > s.priority:
		return fmt.Sprintf("priority %d above the service priority %d", be.Priority(), s.priority)
	}
	return "not in the balancer's set yet (a state change is being published)"
}

// dryPick is pickGroup without side effects, with the reason for its
// choice.
func (b *Balancer) dryPick(g *group, i int, seed uint64) (*backend.Backend, string) {
	if len(g.bs) == 0 {
		return nil, ""
	}
	switch b.kind {
	case Random:
		r := rand.New(rand.NewPCG(seed, uint64(i))).Uint64()
		be := g.pickRandom(r)
		return be, "weighted random: one draw (a dry run's own; real picks draw anew) chose it, " +
			"each backend having its share of the weights"
	case IWRR, RoundRobin:
		pos := b.cursors[i].n.Load()
		be := g.pickRing(pos)
		return be, fmt.Sprintf("%s: next is slot %d of the %d-slot cycle %s",
			b.kind, pos%uint64(len(g.ring)), len(g.ring), ringText(g))
	case LeastConnections, ResponseTime, PendingConnections:
		var be *backend.Backend
		if g.tree != nil {
			be = g.tree.pick()
		} else {
			be = g.scan(b.kind)
		}
		return be, leastWhy(b.kind)
	}
	return nil, ""
}

// leastWhy names what a least-* algorithm minimised.
func leastWhy(k Kind) string {
	switch k {
	case LeastConnections:
		return "LEAST_CONNECTIONS: the lowest (established+pending)/weight, ties to the earlier backend"
	case PendingConnections:
		return "PENDING_CONNECTIONS: the lowest pending/weight, ties to the earlier backend"
	}
	return "RESPONSE_TIME: the lowest latency/weight; a backend without a sample goes first"
}

// ringText lists a cycle by group position, abbreviated when long.
func ringText(g *group) string {
	const show = 32
	parts := make([]string, 0, min(len(g.ring), show))
	for k, j := range g.ring {
		if k == show {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, g.bs[j].ID())
	}
	return "[" + strings.Join(parts, " ") + "]"
}
