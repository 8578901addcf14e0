package adminapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Events is a bounded, in-memory timeline of what happened to the
// running configuration: backends going down and up (with the probe's
// reason), enable/disable (with who asked), reloads and binary upgrades,
// and what the sampler finds by comparing seconds (history_events.go).
// The dashboard shows it newest first. It is written on state changes
// only, never on the request path, and holds the last EventsCap events:
// an old event falls off when a new one comes.
type Events struct {
	mu   sync.Mutex
	ring [EventsCap]Event
	seq  uint64 // number of events ever added; the newest has Seq == seq
}

// EventsCap bounds the timeline: enough for an incident's story, small
// enough to send whole to a page that just opened (~40 kB of JSON).
const EventsCap = 256

// Event kinds.
const (
	EventDown    = "down"
	EventUp      = "up"
	EventEnable  = "enable"
	EventDisable = "disable"
	EventReload  = "reload"
	EventUpgrade = "upgrade"
)

// Event is one entry of the timeline. Seq numbers events from 1, so a
// page asks only for those after the last it has.
type Event struct {
	Seq    uint64 `json:"seq"`
	TimeMS int64  `json:"time_ms"`
	Kind   string `json:"kind"`
	// Object names what it happened to ("backend 10.0.0.1:80"), empty
	// for process-wide events (reloads, upgrades).
	Object string `json:"object,omitempty"`
	// Detail is the reason or the result ("probe: connection refused",
	// "failed: line 3: ...").
	Detail string `json:"detail,omitempty"`
	// Who asked, for changes made through an API ("uid 1000 pid 42").
	Who string `json:"who,omitempty"`
}

// Add records ev, stamping its sequence number and, when it has none,
// the current time. A nil *Events records nothing, so callers need not
// check whether a timeline is kept.
func (e *Events) Add(ev Event) {
	if e == nil {
		return
	}
	if ev.TimeMS == 0 {
		ev.TimeMS = time.Now().UnixMilli()
	}
	e.mu.Lock()
	e.seq++
	ev.Seq = e.seq
	e.ring[(e.seq-1)%EventsCap] = ev
	e.mu.Unlock()
}

// Since returns the events numbered after seq that the ring still holds,
// newest first.
func (e *Events) Since(seq uint64) []Event {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	oldest := uint64(1)
	if e.seq > EventsCap {
		oldest = e.seq - EventsCap + 1
	}
	from := max(seq+1, oldest)
	var out []Event
	for s := e.seq; s >= from; s-- {
		out = append(out, e.ring[(s-1)%EventsCap])
	}
	return out
}

// Observed is implemented by a Controller that keeps a timeline and a
// history for the dashboard (the engine); without it the dashboard
// shows the live table only.
type Observed interface {
	Observer() *Observer
}

func observerOf(c Controller) *Observer {
	if o, ok := c.(Observed); ok {
		return o.Observer()
	}
	return nil
}

// who names the caller of an API request for the timeline: the uid and
// pid of the process on the control socket (SO_PEERCRED), or the
// client's address when it came over TCP (a Dashboard or Control
// backend behind a listener).
func who(r *http.Request) string {
	if p := peerFrom(r.Context()); p.Known {
		return "uid " + strconv.Itoa(p.UID) + " pid " + strconv.Itoa(p.PID)
	}
	if r.RemoteAddr != "" {
		return "client " + r.RemoteAddr
	}
	return "unknown caller"
}

// recordEnable adds the enable/disable of what ref names to c's
// timeline, if it keeps one.
func recordEnable(c Controller, r *http.Request, ref Ref, on bool) {
	o := observerOf(c)
	if o == nil {
		return
	}
	kind := EventDisable
	if on {
		kind = EventEnable
	}
	o.Events.Add(Event{Kind: kind, Object: refName(c, ref), Who: who(r)})
}

// refName describes ref as the dashboard shows it, from a fresh summary.
func refName(c Controller, ref Ref) string {
	st := summary(c)
	var svcs []Service
	prefix := ""
	switch {
	case ref.Listener < 0:
		svcs = st.Services
		prefix = "global "
	case ref.Listener < len(st.Listeners):
		l := &st.Listeners[ref.Listener]
		if ref.Service < 0 {
			return "listener " + listenerName(l, ref.Listener)
		}
		svcs = l.Services
	default:
		return "listener index " + strconv.Itoa(ref.Listener)
	}
	if ref.Service < 0 || ref.Service >= len(svcs) {
		return prefix + "service index " + strconv.Itoa(ref.Service)
	}
	s := &svcs[ref.Service]
	sname := prefix + "service " + serviceName(s, ref.Service)
	if ref.Backend < 0 {
		return sname
	}
	if ref.Backend >= len(s.Backends) {
		return sname + " backend index " + strconv.Itoa(ref.Backend)
	}
	return "backend " + backendName(&s.Backends[ref.Backend]) + " of " + sname
}

func listenerName(l *Listener, i int) string {
	if l.Name != "" {
		return strconv.Quote(l.Name)
	}
	return strconv.Itoa(i)
}

func serviceName(s *Service, i int) string {
	if s.Name != "" {
		return strconv.Quote(s.Name)
	}
	return strconv.Itoa(i)
}

func backendName(b *Backend) string {
	if b.kind() != KindRegular {
		return string(b.kind())
	}
	if b.Port != 0 {
		return b.Address + ":" + strconv.Itoa(b.Port)
	}
	return b.Address
}
