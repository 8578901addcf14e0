package adminapi

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Paging of api/state (lbd's own page, so an lbd extension of nothing):
// at 10,000 services and 20,000 backends the whole state is a 6 MB reply
// and a table no browser keeps responsive when it is rebuilt every
// second. The page asks for one page of services instead:
//
//	GET .../api/state?offset=N&limit=M&q=TEXT
//
// Services are counted across listeners in State's order (each
// listener's, then the global ones); q keeps those whose name, or a
// backend's address (host:port, as the page shows it) or id, contains TEXT (ASCII case folded). The reply
// then holds only the listeners with a service on the page, and
// "page": {offset, limit, total}, total being the services that match.
// Without offset or limit the reply is the whole state, as before.

// maxPageLimit bounds a page: a page is what a browser renders each second.
const maxPageLimit = 1000

type (
	// statePage is what api/state was asked for; paged false: everything.
	statePage struct {
		paged         bool
		offset, limit int
		q             string
	}
	dashPage struct {
		Offset int `json:"offset"`
		Limit  int `json:"limit"`
		Total  int `json:"total"`
	}
)

// parseStatePage reads offset, limit and q. A malformed or negative
// number is an error (the page never sends one); a limit above
// maxPageLimit is cut to it.
func parseStatePage(q url.Values) (statePage, string) {
	var p statePage
	for _, f := range []struct {
		name string
		v    *int
	}{{"offset", &p.offset}, {"limit", &p.limit}} {
		s, ok := q[f.name]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 0 {
			return p, f.name + " must be a number from 0"
		}
		*f.v, p.paged = n, true
	}
	if !p.paged {
		return p, ""
	}
	if _, ok := q["limit"]; !ok || p.limit > maxPageLimit {
		p.limit = maxPageLimit
	}
	p.q = strings.ToLower(q.Get("q"))
	return p, ""
}

// matches tells whether service s is one q keeps.
func (p *statePage) matches(s *Service) bool {
	if p.q == "" || containsFold(s.Name, p.q) {
		return true
	}
	for i := range s.Backends {
		b := &s.Backends[i]
		if containsFold(b.Address, p.q) || containsFold(b.ID, p.q) ||
			b.Port != 0 && containsFold(net.JoinHostPort(b.Address, strconv.Itoa(b.Port)), p.q) { // as the page shows it
			return true
		}
	}
	return false
}

// containsFold reports whether s contains lower (already lower case),
// ASCII letters compared without case, without allocating.
func containsFold(s, lower string) bool {
	n := len(lower)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for j < n && asciiLower(s[i+j]) == lower[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// pageState is dashboardState for one page: the services p keeps,
// counted across listeners, from p.offset, at most p.limit of them.
func pageState(st *State, num numbering, p statePage) dashState {
	out := dashState{
		TimeMS: st.Core.Timestamp.UnixMilli(), Version: st.Core.Version, PID: st.Core.PID,
		UptimeS: st.Core.Uptime.Seconds(), Listeners: []dashListener{},
		Page: &dashPage{Offset: p.offset, Limit: p.limit},
	}
	// pick returns the services of svcs on the page, with their State
	// indices, counting every match into the total.
	pick := func(svcs []Service) (page []Service, index []int) {
		for i := range svcs {
			if !p.matches(&svcs[i]) {
				continue
			}
			n := out.Page.Total
			out.Page.Total++
			if n >= p.offset && n < p.offset+p.limit {
				page, index = append(page, svcs[i]), append(index, i)
			}
		}
		return page, index
	}
	for i := range st.Listeners {
		l := &st.Listeners[i]
		page, index := pick(l.Services)
		if len(page) == 0 && (len(l.Services) > 0 || p.offset > 0) {
			continue
		}
		dl := dashListenerOf(st, num, i)
		dl.Services = dashServicesAt(page, index)
		out.Listeners = append(out.Listeners, dl)
	}
	if page, index := pick(st.Services); len(page) > 0 {
		out.Listeners = append(out.Listeners, dashListener{Index: -1, Number: -1, Name: "global services",
			Protocol: "http", Enabled: true, Services: dashServicesAt(page, index)})
	}
	return out
}
