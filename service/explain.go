package service

import (
	"fmt"
	"math/rand/v2"
	"time"

	"lbd/backend"
	"lbd/balancer"
	"lbd/explain"
	"lbd/routeindex"
	"lbd/rules"
)

// The routing explainer's dry runs of Route, UseSpecial and Pick. They
// read what the real ones read and change nothing: conditions run on the
// caller's State through the tracing evaluator, sessions are looked up
// without refreshing them, the balancer is asked for a dry-run pick.

// RouteTrace is Route that also returns, for every service in order,
// what the router made of it. A FallThrough service's request rules are
// applied to st (the caller's copy of the request), as Route does.
func (r *Router) RouteTrace(st *rules.State) (*Service, []explain.Service, error) {
	var out []explain.Service
	var chosen *Service
	offered := r.offered(st, 0)
	for i, s := range r.Services {
		es := explain.Service{Index: i, Name: s.Name, Pos: s.Cfg.Pos.String()}
		if chosen != nil {
			es.Verdict = "not tried"
			out = append(out, es)
			continue
		}
		if !s.Enabled() {
			es.Verdict = "disabled"
			out = append(out, es)
			continue
		}
		if offered != nil && !offered[i] {
			es.Verdict, es.Skipped = "skipped", r.index.Why(i)
			out = append(out, es)
			continue
		}
		ok, steps, err := s.sel.SelectTrace(st)
		es.Conditions = steps
		if err != nil {
			es.Verdict, es.Error = "error", err.Error()
			out = append(out, es)
			return nil, out, err
		}
		switch {
		case !ok:
			es.Verdict = "no match"
		case s.Cfg.FallThrough:
			es.Verdict = "fall through"
			st.LogSuppress |= s.logMask
			es.Rewrites, err = s.ReqRules.RewriteTrace(st, &st.Req)
			if err != nil {
				es.Error = err.Error()
				out = append(out, es)
				return nil, out, err
			}
			if !s.ReqRules.Empty() {
				offered = r.offered(st, i+1) // as Route looks again
			}
		default:
			es.Verdict = "matched"
			st.LogSuppress |= s.logMask
			chosen = s
		}
		out = append(out, es)
	}
	return chosen, out, nil
}

// offered marks the services from `from` on that the routing index
// offers for the request in st; nil when the router has no index.
func (r *Router) offered(st *rules.State, from int) []bool {
	if r.index == nil {
		return nil
	}
	var it routeindex.Iter
	r.lookup(st, from, &it)
	out := make([]bool, len(r.Services))
	for i := it.Next(); i >= 0; i = it.Next() {
		out[i] = true
	}
	return out
}

// ExplainSpecial is UseSpecial's dry run: whether the request goes to the
// special backend, and why. A Redirect mixed with regular backends is a
// weighted random choice; the dry run draws from its own generator.
func (s *Service) ExplainSpecial(seed uint64) (bool, string) {
	switch {
	case s.Special == nil:
		return false, ""
	case !s.mixedRedirect:
		return true, fmt.Sprintf("the service's %s backend answers every request", s.Special.Kind)
	}
	red := max(s.Special.Priority, 1)
	total := red
	for _, b := range s.Backends {
		if b.Available() {
			total += max(b.Priority(), 0)
		}
	}
	use := rand.New(rand.NewPCG(seed, 1)).IntN(total) < red
	share := fmt.Sprintf("the Redirect has priority %d of %d among the available backends, so it takes %.0f%% of the requests",
		red, total, 100*float64(red)/float64(total))
	if use {
		return true, share + "; this dry run's draw chose it"
	}
	return false, share + "; this dry run's draw chose a regular backend"
}

// Index is b's number in the service as the control API shows it: the
// special backend (if any) is 0, then the Listing. -1 if b is not here.
func (s *Service) Index(b *backend.Backend) int {
	off := 0
	if s.Special != nil {
		off = 1
	}
	for i, en := range s.Listing {
		if en.Backend == b {
			return i + off
		}
	}
	return -1
}

// ExplainPick is Pick's dry run for the session key (nil: none) and the
// balancer. It returns the session lookup (nil for a service without
// sessions), the balancer's explanation (nil when a live pinned session
// decided) and the backend chosen (nil: none, a 503).
func (s *Service) ExplainPick(key []byte, seed uint64) (*explain.Session, *explain.Balancer, *backend.Backend) {
	var es *explain.Session
	if s.Sessions != nil {
		es = s.explainSession(key)
		if es.Pinned {
			b, _, _ := s.Sessions.Get(string(key))
			return es, nil, b
		}
	}
	ex, ok := s.Algo.(interface {
		Explain(uint64, func(*backend.Backend) int) explain.Balancer
	})
	if !ok {
		return es, nil, nil
	}
	eb := ex.Explain(seed, s.Index)
	var chosen *backend.Backend
	if eb.Chosen != nil {
		chosen = s.backendAt(*eb.Chosen)
	}
	return es, &eb, chosen
}

// backendAt is the inverse of Index.
func (s *Service) backendAt(i int) *backend.Backend {
	if s.Special != nil {
		i--
	}
	if i < 0 || i >= len(s.Listing) {
		return nil
	}
	return s.Listing[i].Backend
}

// explainSession looks key up without touching the session: no last-use
// refresh, no removal of an expired entry, no insert.
func (s *Service) explainSession(key []byte) *explain.Session {
	x := &s.keys.extractor
	es := &explain.Session{Type: x.Type.String(), ID: string(x.ID)}
	if key == nil {
		es.Why = "the request carries no session key: the balancer decides and no session is created"
		return es
	}
	es.Key, es.HasKey = string(key), true
	b, last, found := s.Sessions.Get(string(key))
	if !found {
		es.Why = "no live session for this key: the balancer decides, and the backend it picks would be pinned"
		return es
	}
	n := s.Index(b)
	es.Found, es.Backend = true, &n
	if last.IsZero() {
		es.Static = true
	} else {
		es.LastSeen = last.UTC().Format(time.RFC3339)
		es.Expires = last.Add(s.Sessions.TTL()).UTC().Format(time.RFC3339)
	}
	switch {
	case b.Available():
		es.Pinned = true
		es.Why = fmt.Sprintf("pinned to backend %d, which is available", n)
	case !b.Enabled():
		es.Why = fmt.Sprintf("pinned to backend %d, which is disabled: the balancer decides and the session moves", n)
	case !b.Alive():
		es.Why = fmt.Sprintf("pinned to backend %d, which is dead: the balancer decides and the session moves", n)
	default:
		es.Why = fmt.Sprintf("pinned to backend %d, which is at its ConnLimit: the balancer decides and the session moves", n)
	}
	return es
}

// Balancer is the balancer kind of the service, for the explainer.
var _ interface {
	Explain(uint64, func(*backend.Backend) int) explain.Balancer
} = (*balancer.Balancer)(nil)
