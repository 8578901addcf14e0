package adminapi

import (
	"net"
	"strconv"
)

// Summarizer is implemented by a Controller that can take a snapshot
// without the session lists, only their counts (Service.SessionCount):
// what the dashboard polls. Without it the dashboard uses State.
type Summarizer interface {
	Summary() *State
}

func summary(c Controller) *State {
	if s, ok := c.(Summarizer); ok {
		return s.Summary()
	}
	return c.State()
}

// The JSON of api/state: plain counters and states, for the page to turn
// into rates. Indices are State's (listener -1 holds the global
// services), so a POST api/enable can name what it shows; a listener's
// number is what the page calls it, as lbctl list does (numbering.go).
type (
	dashState struct {
		TimeMS    int64          `json:"time_ms"`
		Version   string         `json:"version"`
		PID       int            `json:"pid"`
		UptimeS   float64        `json:"uptime_s"`
		Listeners []dashListener `json:"listeners"`
		// Page is set when a page was asked for (dashboard_page.go).
		Page *dashPage `json:"page,omitempty"`
	}
	dashListener struct {
		Index       int           `json:"index"`
		Number      int           `json:"number"`
		Name        string        `json:"name"`
		Address     string        `json:"address"`
		Protocol    string        `json:"protocol"`
		Enabled     bool          `json:"enabled"`
		Connections int64         `json:"connections"`
		Hits3xx     int64         `json:"hits_3xx"`
		Hits4xx     int64         `json:"hits_4xx"`
		Hits5xx     int64         `json:"hits_5xx"`
		Services    []dashService `json:"services"`
	}
	dashService struct {
		Index       int           `json:"index"`
		Name        string        `json:"name"`
		Enabled     bool          `json:"enabled"`
		SessionType string        `json:"session_type"`
		Sessions    int           `json:"sessions"`
		Backends    []dashBackend `json:"backends"`
	}
	dashBackend struct {
		Index     int    `json:"index"`
		Kind      string `json:"kind"`
		ID        string `json:"id"`
		Address   string `json:"address"`
		Enabled   bool   `json:"enabled"`
		Alive     bool   `json:"alive"`
		Emergency bool   `json:"emergency"`
		Priority  int    `json:"priority"`
		Weight    int    `json:"weight"`
		Requests  int64  `json:"requests"`
		Errors    int64  `json:"errors"`
		Hits2xx   int64  `json:"hits_2xx"`
		Hits3xx   int64  `json:"hits_3xx"`
		Hits4xx   int64  `json:"hits_4xx"`
		Hits5xx   int64  `json:"hits_5xx"`
		Active    int64  `json:"active"`
		Pending   int64  `json:"pending"`
		// LatencyNS is the moving average (-1: no sample yet),
		// LatencyTotalNS the sum the page divides by the answered
		// requests between two polls.
		LatencyNS      int64 `json:"latency_ns"`
		LatencyTotalNS int64 `json:"latency_total_ns"`
	}
)

// dashboardState converts a snapshot, numbering the listeners with num;
// the global services appear as a listener of index -1 named "global
// services".
func dashboardState(st *State, num numbering) dashState {
	out := dashState{
		TimeMS: st.Core.Timestamp.UnixMilli(), Version: st.Core.Version, PID: st.Core.PID,
		UptimeS: st.Core.Uptime.Seconds(), Listeners: []dashListener{},
	}
	for i := range st.Listeners {
		dl := dashListenerOf(st, num, i)
		dl.Services = dashServicesAt(st.Listeners[i].Services, nil)
		out.Listeners = append(out.Listeners, dl)
	}
	if len(st.Services) > 0 {
		out.Listeners = append(out.Listeners, dashListener{Index: -1, Number: -1, Name: "global services",
			Protocol: "http", Enabled: true, Services: dashServicesAt(st.Services, nil)})
	}
	return out
}

// dashListenerOf is listener i of st, its services left out.
func dashListenerOf(st *State, num numbering, i int) dashListener {
	l := &st.Listeners[i]
	addr := l.Address
	if l.Port != 0 {
		addr = net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
	}
	return dashListener{
		Index: i, Number: num.number(st, i), Name: l.Name, Address: addr, Protocol: l.protocol(), Enabled: l.Enabled,
		Connections: l.Connections, Hits3xx: l.Hits3xx, Hits4xx: l.Hits4xx, Hits5xx: l.Hits5xx,
	}
}

// dashServicesAt converts svcs; index gives each one's State index (nil:
// its position in svcs).
func dashServicesAt(svcs []Service, index []int) []dashService {
	out := make([]dashService, 0, len(svcs))
	for i := range svcs {
		s := &svcs[i]
		at := i
		if index != nil {
			at = index[i]
		}
		ds := dashService{Index: at, Name: s.Name, Enabled: s.Enabled, SessionType: s.sessionType(),
			Sessions: max(s.SessionCount, len(s.Sessions)), Backends: make([]dashBackend, 0, len(s.Backends))}
		for j := range s.Backends {
			b := &s.Backends[j]
			addr := b.Address
			if b.Port != 0 {
				addr = net.JoinHostPort(b.Address, strconv.Itoa(b.Port))
			}
			ds.Backends = append(ds.Backends, dashBackend{
				Index: j, Kind: string(b.kind()), ID: b.ID, Address: addr, Enabled: b.Enabled, Alive: b.Alive,
				Emergency: b.Emergency, Priority: b.Priority, Weight: b.Weight,
				Requests: b.Requests + b.Answered, Errors: b.Errors, Hits2xx: b.Hits2xx, Hits3xx: b.Hits3xx,
				Hits4xx: b.Hits4xx, Hits5xx: b.Hits5xx, Active: b.Active, Pending: b.Pending,
				LatencyNS: int64(b.ResponseTime), LatencyTotalNS: int64(b.LatencyTotal),
			})
		}
		out = append(out, ds)
	}
	return out
}
