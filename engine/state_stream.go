package engine

import (
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
