package engine

import (
	"iter"
	"time"

	"lbd/adminapi"
)

// StreamSummary hands the dashboard's sampler what Summary holds, one
// listener and one service at a time (adminapi.Streamer): the sampler
// reads counters and keeps none of the values, so one Service and its
// backends are reused from service to service instead of a State of
// every service and backend being built each second.
func (e *Engine) StreamSummary(listener func(li int, l *adminapi.Listener), service func(li, si int, s *adminapi.Service)) *adminapi.ClusterStatus {
	e.mu.Lock()
	g, servers := e.g, e.servers
	e.mu.Unlock()
	now := time.Now()
	// One Service value for all: passed by pointer to a function value,
	// a value declared in the loop would be a heap object per service.
	var sv adminapi.Service
	for i, l := range g.cfg.Listeners {
		v := listenerView(g, servers, i)
		listener(i, &v)
		for si, s := range g.services[i] {
			sv = e.listedService(g, s, l.Tunnel, now, false, sv.Backends)
			service(i, si, &sv)
		}
	}
	for si, s := range g.global {
		sv = e.listedService(g, s, false, now, false, sv.Backends)
		service(-1, si, &sv)
	}
	return e.clusterStatus()
}

// The dashboard's sampler and the listings find these by assertion: a
// signature drift would silently bring back a State per sample or
// listing.
var (
	_ adminapi.Streamer        = (*Engine)(nil)
	_ adminapi.SummaryStreamer = (*Engine)(nil)
)

// StreamedSummary is Summary whose services are made one at a time
// (adminapi.SummaryStreamer): the State has no services, counts says
// how many each listener and the global list have, and services yields
// each service's Summary in State's order, every listener's then the
// global ones, in one Service value reused from one to the next. All
// come from the same configuration, so a reload in between changes
// none of them. A listing of 10,000 services and 20,000 backends is
// encoded from it without a State of 17 MB being built first (issue 36).
func (e *Engine) StreamedSummary() (*adminapi.State, adminapi.ServiceCounts, iter.Seq[*adminapi.Service]) {
	e.mu.Lock()
	g, servers := e.g, e.servers
	e.mu.Unlock()
	now := time.Now()
	st := e.stateHead(g, servers, now)
	counts := adminapi.ServiceCounts{Listeners: make([]int, len(g.cfg.Listeners)), Global: len(g.global)}
	for i := range g.cfg.Listeners {
		st.Listeners = append(st.Listeners, listenerView(g, servers, i))
		counts.Listeners[i] = len(g.services[i])
	}
	services := func(yield func(*adminapi.Service) bool) {
		var sv adminapi.Service
		for i, l := range g.cfg.Listeners {
			for _, s := range g.services[i] {
				if sv = e.listedService(g, s, l.Tunnel, now, false, sv.Backends); !yield(&sv) {
					return
				}
			}
		}
		for _, s := range g.global {
			if sv = e.listedService(g, s, false, now, false, sv.Backends); !yield(&sv) {
				return
			}
		}
	}
	return st, counts, services
}
