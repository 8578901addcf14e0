package adminapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
)

// lbd's backend changes on the Pound socket (extensions; Pound answers
// 405 to both). PATCH on Pound's own backend paths sets settings, in
// Pound's style of arguments in the query:
//
//	PATCH /listener/L/S/B?weight=N&priority=N&connlimit=N
//	PATCH /service/S/B?...   (a global service)
//
// and replies with the backend. DELETE on those paths is Pound's
// disable, so removal has a path of its own, with "-" as L for the
// global services:
//
//	DELETE /backend/L/S/B
//
// which replies with the service. Failures are JSON,
// {"result":"error","reason":...}, like lbd's other extensions; a PATCH
// of a listener or a service stays the 405 page it was.

// poundExtFunc is an extension endpoint: the JSON value to send, or why
// not. Its refusals are JSON, except those marked page (Pound's own 405),
// which are Pound's page unless the client accepts JSON.
type poundExtFunc func(q *poundReq) (any, *apiError)

// wrapExt is wrapView for extension endpoints.
func (a *poundAPI) wrapExt(fn poundExtFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		indent, ok := parseIndent(r.URL.RawQuery)
		if !ok {
			writeRefusal(w, errIndent)
			return
		}
		view, e := a.view(r, false)
		if e != nil {
			writeRefusal(w, e)
			return
		}
		q := &poundReq{r: r, rest: mux.Vars(r)["rest"], view: view}
		v, e := fn(q)
		switch {
		case e == nil:
			writePoundReply(w, "application/json", encodeJSON(v, poundStyle(indent)))
		case e.page:
			poundRefuse(w, r, e)
		default:
			writeRefusal(w, e)
		}
	})
}

// patchBackend is PATCH /listener/L/S/B or, global, /service/S/B.
func (a *poundAPI) patchBackend(global bool) poundExtFunc {
	return func(q *poundReq) (any, *apiError) {
		t, e := a.backendTarget(q, global)
		if e != nil {
			return nil, e
		}
		set, err := backendSettingsQuery(q.r.URL.RawQuery)
		if err != nil {
			return nil, refuse(http.StatusBadRequest, "%v", err)
		}
		if err := a.c.SetBackend(q.view.ref(t), set); err != nil {
			return nil, poundControllerRefusal(err)
		}
		v := newPoundView(a.c.State())
		if t.lst >= len(v.listeners) || t.svc >= len(v.services(t.lst)) || t.be >= len(v.services(t.lst)[t.svc].Backends) {
			return nil, errGone
		}
		return poundBackend(&v.services(t.lst)[t.svc].Backends[t.be], v.st.BackendStats), nil
	}
}

// deleteBackend is DELETE /backend/L/S/B.
func (a *poundAPI) deleteBackend(q *poundReq) (any, *apiError) {
	t, e := a.backendTarget(q, false)
	if e != nil {
		if e.page {
			e = refuse(http.StatusBadRequest, "DELETE /backend/L/S/B removes a backend: name one")
		}
		return nil, e
	}
	if err := a.c.RemoveBackend(q.view.ref(t)); err != nil {
		return nil, poundControllerRefusal(err)
	}
	return a.serviceAfter(q, t)
}

// backendTarget resolves the object path of a backend endpoint; a path
// to a listener or a service is Pound's 405 page.
func (a *poundAPI) backendTarget(q *poundReq, global bool) (poundTarget, *apiError) {
	var t poundTarget
	notBackend := &apiError{status: http.StatusMethodNotAllowed, page: true,
		reason: q.r.Method + " changes a backend: name one, /L/S/B"}
	if q.rest == "" {
		return t, notBackend // the whole listing
	}
	e := refuse(http.StatusNotFound, "no such backend: %s", q.r.URL.Path)
	if strings.HasPrefix(q.rest, "/") {
		if global {
			t, e = q.view.parseServicePath(poundTarget{lst: -1, svc: -1, be: -1}, q.rest)
		} else {
			t, e = q.view.parseListenerPath(q.rest)
		}
	}
	switch {
	case e != nil:
		return t, e
	case t.be < 0:
		return t, notBackend
	case q.view.isControl(t.lst):
		return t, refuse(http.StatusBadRequest, "the control socket's backend cannot be changed")
	}
	return t, nil
}

// backendSettingsQuery reads weight, priority and connlimit from the
// query (indent may be there too); anything else, a value given twice or
// one that is not a decimal number is refused, so a typo changes nothing.
func backendSettingsQuery(rawQuery string) (BackendSettings, error) {
	var set BackendSettings
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return set, fmt.Errorf("malformed query: %v", err)
	}
	dst := map[string]**int{"weight": &set.Weight, "priority": &set.Priority, "connlimit": &set.ConnLimit}
	for name, vs := range vals {
		p, ok := dst[name]
		switch {
		case name == "indent":
			continue
		case !ok:
			return set, fmt.Errorf("unknown parameter %q: give weight, priority or connlimit", name)
		case len(vs) > 1:
			return set, fmt.Errorf("%s given %d times", name, len(vs))
		}
		n, err := strconv.Atoi(vs[0])
		if err != nil || strconv.Itoa(n) != vs[0] {
			return set, fmt.Errorf("%s %q is not a decimal number", name, vs[0])
		}
		*p = &n
	}
	if set.Weight == nil && set.Priority == nil && set.ConnLimit == nil {
		return set, errors.New("nothing to change: give weight, priority or connlimit")
	}
	return set, nil
}

// reasonOf is a Controller error as an operator reads it: without the
// sentinel the status already says.
func reasonOf(err error) string {
	msg := err.Error()
	for _, s := range []error{ErrNotFound, ErrInvalid, ErrConflict} {
		if errors.Is(err, s) {
			msg = strings.TrimSuffix(msg, ": "+s.Error())
		}
	}
	return msg
}
