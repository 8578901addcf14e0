package adminapi

import (
	"strconv"
	"time"
)

// Timeline events that no single call site sees happen: a TBF condition
// starting and stopping to refuse requests, and cluster members coming
// and going. The sampler finds them by comparing each second's Summary
// with the last, as it does for the graphs, so the request path and the
// cluster's loops stay unaware of the timeline.

// Event kinds found by the sampler.
const (
	// EventTBF: a TBF condition began refusing requests, or stopped.
	EventTBF = "tbf"
	// EventJoin and EventLeave: a cluster member appeared or went.
	EventJoin  = "join"
	EventLeave = "leave"
	// EventCluster: this instance lost or regained its Redis.
	EventCluster = "cluster"
)

// tbfQuiet is how long a TBF condition must refuse nothing for its run
// of refusals to end: a flood that pauses for a second is one story in
// the timeline, not one event per second.
const tbfQuiet = 5 * time.Second

// tbfWatch follows one TBF condition's refusal counter.
type tbfWatch struct {
	refused uint64    // the counter at the last sample
	start   time.Time // when the current run of refusals began (zero: none)
	last    time.Time // the last sample that saw a refusal
	run     uint64    // refusals in the current run
	seen    uint64    // the tick that last saw the condition
}

// sample compares the counter now at cur with the last sample's and
// returns the event the change makes, if any.
func (w *tbfWatch) sample(now time.Time, cur uint64, first bool) (Event, bool) {
	d := cur - w.refused
	if cur < w.refused || first {
		d = 0 // a new condition, or one a reload replaced: no history
	}
	w.refused = cur
	switch {
	case d > 0 && w.start.IsZero():
		w.start, w.last, w.run = now, now, d
		return Event{Kind: EventTBF, Detail: "refusing requests: " + strconv.FormatUint(d, 10) + " in the last second"}, true
	case d > 0:
		w.last, w.run = now, w.run+d
	case !w.start.IsZero() && now.Sub(w.last) >= tbfQuiet:
		ev := Event{Kind: EventTBF, Detail: "stopped refusing: " + strconv.FormatUint(w.run, 10) +
			" requests refused over " + w.last.Sub(w.start).Round(time.Second).String()}
		w.start = time.Time{}
		return ev, true
	}
	return Event{}, false
}

// watchTBFs samples the TBF conditions of one scope (a listener or a
// service), named scope in the timeline, under key prefix.
func (o *Observer) watchTBFs(prefix, scope string, rls []RateLimit, now time.Time) {
	for i := range rls {
		key := prefix + "/tbf" + strconv.Itoa(i)
		w := o.tbfs[key]
		first := w == nil
		if first {
			if len(o.tbfs) >= maxSeries {
				continue
			}
			w = &tbfWatch{}
			o.tbfs[key] = w
		}
		w.seen = o.tick
		if ev, ok := w.sample(now, rls[i].Refused, first); ok {
			ev.TimeMS = now.UnixMilli()
			ev.Object = "TBF " + strconv.Itoa(i) + " (" + rls[i].Key + ") of " + scope
			o.Events.Add(ev)
		}
	}
}

// watchCluster records members joining and leaving and this instance's
// Redis going and coming back. A member is a peer heard from within
// three heartbeats (ClusterNode.Connected): the cluster keeps peers it
// no longer hears from listed, with their last contact. The first
// sample only learns who is there: members present at start did not
// join.
func (o *Observer) watchCluster(c *ClusterStatus, now time.Time) {
	if c == nil {
		return
	}
	at := now.UnixMilli()
	members := make(map[string]bool, len(c.Nodes))
	lastContact := make(map[string]time.Time, len(c.Nodes))
	for i := range c.Nodes {
		if n := &c.Nodes[i]; !n.Self {
			members[n.Name] = n.Connected
			lastContact[n.Name] = n.LastContact
		}
	}
	if o.members != nil {
		for name, up := range members {
			if up && !o.members[name] {
				o.Events.Add(Event{TimeMS: at, Kind: EventJoin, Object: "cluster member " + strconv.Quote(name)})
			}
		}
		for name, up := range o.members {
			if up && !members[name] {
				detail := "no longer listed"
				if lc := lastContact[name]; !lc.IsZero() {
					detail = "not heard from since " + lc.UTC().Format("15:04:05.000")
				}
				o.Events.Add(Event{TimeMS: at, Kind: EventLeave, Object: "cluster member " + strconv.Quote(name), Detail: detail})
			}
		}
		if o.redisUp != c.Connected {
			ev := Event{TimeMS: at, Kind: EventCluster, Object: "Redis " + c.Redis, Detail: "reachable again"}
			if !c.Connected {
				ev.Detail = "unreachable: " + c.LastError
			}
			o.Events.Add(ev)
		}
	}
	o.members, o.redisUp = members, c.Connected
}

// scopeName names service si of listener li (-1: the global services)
// as the timeline does.
func scopeName(li, si int, s *Service) string {
	prefix := ""
	if li < 0 {
		prefix = "global "
	}
	return prefix + "service " + serviceName(s, si)
}
