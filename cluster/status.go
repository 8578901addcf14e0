package cluster

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lbd/adminapi"
)

// peer is another member as this one sees it.
type peer struct {
	lastContact atomic.Int64 // Unix nanoseconds of the last message heard
	lag         lagHistogram
	applied     atomic.Int64
	// listed: Unix milliseconds of its last heartbeat as Redis recorded
	// it (the node list), for members not heard since this one started.
	listed atomic.Int64
}

type peers struct {
	mu sync.Mutex
	m  map[string]*peer
}

// get returns the peer named name, creating it.
func (p *peers) get(name string) *peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.m[name]
	if x == nil {
		x = &peer{}
		p.m[name] = x
	}
	return x
}

// heard records a message from name at now and returns the peer.
func (n *Node) heard(name string, now time.Time) *peer {
	p := n.peers.get(name)
	p.lastContact.Store(now.UnixNano())
	return p
}

// observeLag records the lag of a change from p applied at now.
func (n *Node) observeLag(p *peer, d time.Duration) {
	if f := n.applied.Load(); f != nil {
		(*f)(d)
	}
	n.lag.observe(d)
	p.lag.observe(d)
	p.applied.Add(1)
}

// Status is the member's state for the control API and the metrics.
func (n *Node) Status() *adminapi.ClusterStatus {
	h := &n.health
	h.mu.Lock()
	st := &adminapi.ClusterStatus{
		Node: n.name, Redis: n.redisName(), Connected: h.connected.Load(), Since: h.since, LastError: h.lastErr,
	}
	lastOK := h.lastOK
	h.mu.Unlock()
	st.SessionsSent, st.SessionsApplied = n.stats.sessionsSent.Load(), n.stats.sessionsApplied.Load()
	st.SessionsDropped = n.stats.sessionsDropped.Load()
	st.StateSent, st.StateApplied = n.stats.stateSent.Load(), n.stats.stateApplied.Load()
	dirty, kept := n.overlay.counts()
	st.StatePending, st.StateKept = int64(dirty), int64(kept)
	st.LagBounds = lagBounds
	st.LagBuckets = n.lag.cumulative()
	st.LagCount, st.LagSum = n.lag.count.Load(), time.Duration(n.lag.sum.Load())
	q, window := n.lag.recent.quantiles(0.5, 0.99)
	st.LagP50, st.LagP99, st.LagWindow = q[0], q[1], window
	st.Nodes = append(st.Nodes, adminapi.ClusterNode{Name: n.name, Self: true, LastContact: lastOK, Connected: st.Connected})
	n.peers.mu.Lock()
	for name, p := range n.peers.m {
		if name == n.name {
			continue
		}
		q, window := p.lag.recent.quantiles(0.5, 0.99)
		cn := adminapi.ClusterNode{Name: name, LagP50: q[0], LagP99: q[1], LagWindow: window, Applied: p.applied.Load()}
		if ns := p.lastContact.Load(); ns > 0 {
			cn.LastContact = time.Unix(0, ns)
		} else if ms := p.listed.Load(); ms > 0 {
			cn.LastContact = time.UnixMilli(ms)
		}
		// A member heard within three heartbeats is connected to Redis.
		cn.Connected = !cn.LastContact.IsZero() && time.Since(cn.LastContact) < 3*heartbeatEvery
		st.Nodes = append(st.Nodes, cn)
	}
	n.peers.mu.Unlock()
	slices.SortFunc(st.Nodes, func(a, b adminapi.ClusterNode) int { return strings.Compare(a.Name, b.Name) })
	return st
}
