package balancer

import (
	"math/bits"

	"lbd/backend"
)

// pickRandom maps one 64-bit random number to a weighted choice: the high
// word of r*n is a uniform index, the low word a uniform coin for the alias
// table, so one draw suffices. Equal weights have no table: the index is
// the choice (the table would keep every index).
func (g *group) pickRandom(r uint64) *backend.Backend {
	hi, lo := bits.Mul64(r, uint64(len(g.bs)))
	i := uint32(hi)
	if g.thr != nil && lo >= g.thr[i] {
		i = g.alias[i]
	}
	return g.from(int(i))
}

// pickRing returns the backend at position pos of the precomputed cycle.
func (g *group) pickRing(pos uint64) *backend.Backend {
	return g.from(int(g.ring[pos%uint64(len(g.ring))]))
}

// from returns bs[i] if it is available, else the next available backend in
// config order (zproxy skips a backend over its ConnLimit the same way), or
// nil after a full turn.
func (g *group) from(i int) *backend.Backend {
	if be := g.bs[i]; be.Available() {
		return be
	}
	n := len(g.bs)
	for k := 1; k < n; k++ {
		j := i + k
		if j >= n {
			j -= n
		}
		if be := g.bs[j]; be.Available() {
			return be
		}
	}
	return nil
}

// pickConns returns the available backend minimising conns/weight, where
// conns is pending (PENDING_CONNECTIONS) or pending+established
// (LEAST_CONNECTIONS). Ratios are compared by cross-multiplication with a
// strict <, so ties keep the earlier backend in config order (zproxy). A
// backend with no connection at all cannot be beaten, so the scan stops at
// the first one: the result is the same, the common idle case is O(1).
func (g *group) pickConns(pendingOnly bool) *backend.Backend {
	var best *backend.Backend
	var bc, bw int64
	for i, be := range g.bs {
		if !be.Available() {
			continue
		}
		c := be.Pending()
		if !pendingOnly {
			c += be.Active()
		}
		if c == 0 {
			return be
		}
		if w := g.w[i]; best == nil || c*bw < bc*w {
			best, bc, bw = be, c, w
		}
	}
	return best
}

// pickLatency returns the available backend minimising latency/weight; the
// first one without a sample yet wins outright so that every backend gets
// measured (zproxy C++ behaviour).
func (g *group) pickLatency() *backend.Backend {
	var best *backend.Backend
	var bl, bw int64
	for i, be := range g.bs {
		if !be.Available() {
			continue
		}
		l := int64(be.Latency())
		if l < 0 {
			return be
		}
		if w := g.w[i]; best == nil || l*bw < bl*w {
			best, bl, bw = be, l, w
		}
	}
	return best
}

// beats reports whether backend j strictly beats backend i for kind, by the
// rules of pickConns and pickLatency (the tree and the scan must agree).
func (g *group) beats(kind Kind, j, i int) bool {
	bi, bj := g.bs[i], g.bs[j]
	if kind == ResponseTime {
		li, lj := int64(bi.Latency()), int64(bj.Latency())
		switch {
		case li < 0:
			return false
		case lj < 0:
			return true
		}
		return lj*g.w[i] < li*g.w[j]
	}
	ci, cj := bi.Pending(), bj.Pending()
	if kind == LeastConnections {
		ci += bi.Active()
		cj += bj.Active()
	}
	return cj*g.w[i] < ci*g.w[j]
}

// scan is the linear pick of the least-connections family.
func (g *group) scan(kind Kind) *backend.Backend {
	switch kind {
	case LeastConnections:
		return g.pickConns(false)
	case PendingConnections:
		return g.pickConns(true)
	}
	return g.pickLatency()
}
