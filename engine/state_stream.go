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
	var buf []adminapi.Backend
	for i, l := range g.cfg.Listeners {
		v := listenerView(g, servers, i)
		listener(i, &v)
		for si, s := range g.services[i] {
			sv := e.listedService(g, s, l.Tunnel, now, false, buf)
			service(i, si, &sv)
			buf = sv.Backends
		}
	}
	for si, s := range g.global {
		sv := e.listedService(g, s, false, now, false, buf)
		service(-1, si, &sv)
		buf = sv.Backends
	}
	return e.clusterStatus()
}
