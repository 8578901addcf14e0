package engine

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"lbd/adminapi"
	"lbd/config"
	"lbd/explain"
	"lbd/proxy"
)

// The Engine explains routing (lbctl route).
var _ adminapi.RouteExplainer = (*Engine)(nil)

// ExplainRoute says which listener, service and backend the request q
// describes would get, and why, without changing anything: see
// proxy.Server.Explain.
func (e *Engine) ExplainRoute(q explain.Query) (*explain.Route, error) {
	e.mu.Lock()
	g, servers := e.g, e.servers
	e.mu.Unlock()
	li, why, err := chooseListener(g.cfg, q)
	if err != nil {
		return nil, err
	}
	if li >= len(servers) {
		return nil, fmt.Errorf("listener %d is not bound: %w", li, adminapi.ErrNotFound)
	}
	r, err := servers[li].srv.Explain(q, li)
	if errors.Is(err, proxy.ErrBadQuery) {
		return nil, fmt.Errorf("%w: %w", adminapi.ErrInvalid, err)
	}
	if err != nil {
		return nil, err
	}
	r.Listener.Why = why
	return r, nil
}

// chooseListener finds the listener q names (index or name), or the one
// its URL would reach: the first listener of the URL's scheme and port,
// else the first of its scheme, else the first that speaks HTTP.
func chooseListener(cfg *config.Config, q explain.Query) (int, string, error) {
	ls := cfg.Listeners
	if q.Listener != "" {
		if n, err := strconv.Atoi(q.Listener); err == nil {
			if n < 0 || n >= len(ls) {
				return 0, "", fmt.Errorf("listener %d: %w", n, adminapi.ErrNotFound)
			}
			return n, "named by its index", nil
		}
		for i, l := range ls {
			if l.Name == q.Listener {
				return i, "named by its name", nil
			}
		}
		return 0, "", fmt.Errorf("listener %q: %w", q.Listener, adminapi.ErrNotFound)
	}
	scheme, port := "http", 0
	if i := strings.Index(q.URL, "://"); i > 0 && !strings.HasPrefix(q.URL, "/") {
		if u, err := url.Parse(q.URL); err == nil {
			scheme = strings.ToLower(u.Scheme)
			port, _ = strconv.Atoi(u.Port()) // no port: 0, matched below by scheme alone
		}
	}
	https := scheme == "https"
	for i, l := range ls {
		if !l.Tunnel && l.HTTPS == https && port != 0 && l.Port == port {
			return i, fmt.Sprintf("the first %s listener on port %d, the URL's", scheme, port), nil
		}
	}
	for i, l := range ls {
		if !l.Tunnel && l.HTTPS == https {
			return i, fmt.Sprintf("the first %s listener (give -l to choose another)", scheme), nil
		}
	}
	for i, l := range ls {
		if !l.Tunnel {
			return i, "the first HTTP listener (give -l to choose another)", nil
		}
	}
	if len(ls) > 0 {
		return 0, "the first listener, a Tunnel", nil
	}
	return 0, "", fmt.Errorf("no listener: %w", adminapi.ErrNotFound)
}
