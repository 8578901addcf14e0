package adminapi

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
)

// A service's sessions a page at a time (an lbd extension on both
// sockets), for tables too large to list whole:
//
//	Pound:  GET /listener/L/S/sessions?limit=N&after=KEY
//	zproxy: GET /listener/L/service/S/sessions?limit=N&after=KEY
//
// The page holds at most limit sessions (default and cap below) whose
// keys sort after KEY (URL-encoded; absent for the first page), in key
// order, the one order stable from page to page. "next" is the key to
// pass as after for the next page, null on the last. The snapshot it
// resolves the path in is a Summary: no session list is copied.

// SessionPager is implemented by a Controller that pages through a
// service's session table.
type SessionPager interface {
	// SessionPage returns at most limit live sessions of the service ref
	// names whose keys sort after after, in key order, and whether more
	// follow.
	SessionPage(ref Ref, after string, limit int) (page []Session, more bool, err error)
}

// Page sizes.
const (
	defaultSessionPage = 1000
	maxSessionPage     = 100000
)

// sessionPageQuery reads ?limit and ?after.
func sessionPageQuery(rawQuery string) (after string, limit int, e *apiError) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", 0, refuse(http.StatusBadRequest, "bad query: %v", err)
	}
	limit = defaultSessionPage
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxSessionPage {
			return "", 0, refuse(http.StatusBadRequest, "limit must be a number from 1 to %d, not %q", maxSessionPage, s)
		}
		limit = n
	}
	return q.Get("after"), limit, nil
}

// pageOf runs the pager of c, which the routes checked it has.
func pageOf(c Controller, ref Ref, after string, limit int) ([]Session, any, error) {
	page, more, err := c.(SessionPager).SessionPage(ref, after, limit)
	if err != nil {
		return nil, nil, err
	}
	var next any
	if more && len(page) > 0 {
		next = page[len(page)-1].Key
	}
	return page, next, nil
}

// canPage tells whether c pages sessions; without, the paged routes do
// not exist (404 on the Pound socket, zproxy's whole list on its own).
func canPage(c Controller) bool {
	_, ok := c.(SessionPager)
	return ok
}

// poundSessionPage is GET /listener/L/S/sessions.
func (a *poundAPI) poundSessionPage(w http.ResponseWriter, r *http.Request) {
	if !canPage(a.c) {
		poundNotFound(w, r)
		return
	}
	after, limit, e := sessionPageQuery(r.URL.RawQuery)
	if e != nil {
		poundRefuse(w, r, e)
		return
	}
	q := &poundReq{r: r, rest: strings.TrimSuffix(mux.Vars(r)["rest"], "/sessions"), view: newPoundView(summary(a.c))}
	t, e := a.sessionTarget(q)
	if e == nil && t.be >= 0 {
		e = refuse(http.StatusBadRequest, "sessions belong to a service: /listener/L/S/sessions")
	}
	if e != nil {
		poundRefuse(w, r, e)
		return
	}
	page, next, err := pageOf(a.c, q.view.ref(t), after, limit)
	if err != nil {
		poundRefuse(w, r, sessionRefusal(q, err))
		return
	}
	o := jobject{}.add("kind", "sessions").add("next", next).add("sessions", poundSessions(page))
	writePoundReply(w, "application/json", encodeJSON(o, poundStyle(0)))
}

// zproxySessionPage is GET .../service/S/sessions with ?limit or ?after.
func (a *zproxyAPI) zproxySessionPage(w http.ResponseWriter, r *http.Request) {
	after, limit, e := sessionPageQuery(r.URL.RawQuery)
	if e != nil {
		writeZproxy(w, zbare(e.status, "%s", e.reason).forClient(r))
		return
	}
	st := summary(a.c)
	p := resolve(st, mux.Vars(r))
	if p.si < 0 {
		writeZproxy(w, p.serviceNotFound().forClient(r))
		return
	}
	page, next, err := pageOf(a.c, Ref{Listener: p.li, Service: p.si, Backend: -1}, after, limit)
	switch {
	case errors.Is(err, ErrNotFound):
		writeZproxy(w, p.shortServiceNotFound().forClient(r))
		return
	case errors.Is(err, ErrInvalid):
		writeZproxy(w, zerr(http.StatusBadRequest, "Invalid request: %s.", reasonOf(err)).forClient(r))
		return
	case err != nil:
		writeZproxy(w, zerr(http.StatusInternalServerError, "Failed to list sessions: %v", err).forClient(r))
		return
	}
	s := *p.service()
	s.Sessions = page
	writeZproxy(w, zjson(jobject{}.add("next", next).add("sessions", zSessions(&s))).forClient(r))
}
