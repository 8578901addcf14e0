package adminapi

import (
	"strconv"
	"strings"
)

// The zproxy objects of zproxy.md §1.3, members in the order jansson
// emits them (insertion order; e.g. "nfmark" after "type").

// zListener serialises a listener; id is its index.
func zListener(id int, l *Listener) jobject {
	return jobject{}.
		add("3xx-code-hits", l.Hits3xx).
		add("4xx-code-hits", l.Hits4xx).
		add("5xx-code-hits", l.Hits5xx).
		add("address", l.Address).
		add("connections", l.Connections).
		add("https", l.HTTPS).
		add("id", id).
		add("name", l.Name).
		add("pending-connections", l.Pending). // the real count, not zproxy's copy of connections
		add("port", l.Port).
		add("services", zServices(l.Services)).
		add("waf-hits", l.WAFHits)
}

func zServices(svcs []Service) jarray {
	a := make(jarray, len(svcs))
	for i := range svcs {
		a[i] = zService(&svcs[i])
	}
	return a
}

// zService serialises a service (zproxy 0.9.5 has no status field).
func zService(s *Service) jobject {
	return jobject{}.
		add("backends", zBackends(s)).
		add("name", s.Name).
		add("priority", s.Priority).
		add("sessions", zSessions(s))
}

// zBackends lists the regular backends: zproxy shows none for a
// redirect service, and has no matrices (the backends they made are
// listed).
func zBackends(s *Service) jarray {
	a := make(jarray, 0, len(s.Backends))
	for i := range s.Backends {
		if k := s.Backends[i].Kind; k == KindRedirect || k == KindMatrix {
			continue
		}
		a = append(a, zBackend(s, &s.Backends[i]))
	}
	return a
}

// zBackend serialises a backend. response-time is the measured moving
// average (zproxy 0.9.5 always prints its -1.0 stub); cookie-key appears
// only for COOKIEINSERT services, after response-time.
func zBackend(s *Service, b *Backend) jobject {
	rt := jreal(-1)
	if b.ResponseTime >= 0 {
		rt = jreal(b.ResponseTime.Seconds())
	}
	o := jobject{}.
		add("2xx-code-hits", b.Hits2xx).
		add("3xx-code-hits", b.Hits3xx).
		add("4xx-code-hits", b.Hits4xx).
		add("5xx-code-hits", b.Hits5xx).
		add("address", b.Address).
		// zproxy shows 0 until the first connect (lbd keeps -1 inside
		// for "no sample").
		add("connect-time", jreal(max(b.ConnectTime, 0).Seconds())).
		add("connections", b.Active).
		add("connections-limit", b.ConnLimit).
		add("https", b.HTTPS).
		add("id", backendID(b)).
		add("pending-connections", b.Pending).
		add("port", b.Port).
		add("priority", b.Priority).
		add("response-time", rt)
	if isCookieInsert(s.SessionType) {
		o = o.add("cookie-key", b.CookieKey)
	}
	return o.
		add("status", zStatus(b)).
		add("type", s.RedirectCode).
		add("nfmark", b.NfMark).
		add("weight", b.Weight)
}

// zStatus is the monitor state: disabled by the API, else active or down.
func zStatus(b *Backend) string {
	switch {
	case !b.Enabled:
		return "disabled"
	case b.Alive:
		return "active"
	default:
		return "down"
	}
}

// zSessions serialises a session table; last-seen is absolute Unix time,
// 0 for a static session.
func zSessions(s *Service) jarray {
	a := make(jarray, len(s.Sessions))
	for i, ss := range s.Sessions {
		bid := ""
		if ss.Backend >= 0 && ss.Backend < len(s.Backends) {
			bid = backendID(&s.Backends[ss.Backend])
		}
		var last int64
		if !ss.LastSeen.IsZero() {
			last = ss.LastSeen.Unix()
		}
		a[i] = jobject{}.add("id", ss.Key).add("backend-id", bid).add("last-seen", last)
	}
	return a
}

// zAllSessions is GET /sessions: [{id, services:[{name, sessions}]}].
func zAllSessions(st *State) jarray {
	a := make(jarray, len(st.Listeners))
	for i := range st.Listeners {
		svcs := st.Listeners[i].Services
		sa := make(jarray, len(svcs))
		for j := range svcs {
			sa[j] = jobject{}.add("name", svcs[j].Name).add("sessions", zSessions(&svcs[j]))
		}
		a[i] = jobject{}.add("id", i).add("services", sa)
	}
	return a
}

// backendID is the zproxy id: explicit, or "address-port".
func backendID(b *Backend) string {
	if b.ID != "" {
		return b.ID
	}
	return b.Address + "-" + strconv.Itoa(b.Port)
}

// isCookieInsert reports zproxy's COOKIEINSERT type (BACKENDCOOKIE is an
// alias).
func isCookieInsert(t string) bool {
	return strings.EqualFold(t, "COOKIEINSERT") || strings.EqualFold(t, "BACKENDCOOKIE")
}
