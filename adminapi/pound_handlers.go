package adminapi

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// listAll is GET /: the full listing.
func (a *poundAPI) listAll(q *poundReq) (any, int) {
	return q.view.all(), 0
}

// core is GET /core.
func (a *poundAPI) core(q *poundReq) (any, int) {
	return poundCore(&q.view.st.Core), 0
}

// listListener is GET /listener[/L[/S[/B]]]; "/listener" and "/listener/-"
// alone are the full listing.
func (a *poundAPI) listListener(q *poundReq) (any, int) {
	t, status := q.view.parseListenerPath(q.rest)
	if status != 0 {
		return nil, status
	}
	return q.view.object(t), 0
}

// listService is GET /service/S[/B] (global services).
func (a *poundAPI) listService(q *poundReq) (any, int) {
	t, status := q.view.parseServicePath(poundTarget{lst: -1, svc: -1, be: -1}, q.rest)
	if status != 0 {
		return nil, status
	}
	return q.view.object(t), 0
}

// enableListener is PUT (enable) or DELETE (disable) /listener/L[/S[/B]].
func (a *poundAPI) enableListener(on bool) poundFunc {
	return func(q *poundReq) (any, int) {
		if !strings.HasPrefix(q.rest, "/") {
			return nil, http.StatusNotFound
		}
		t, status := q.view.parseListenerPath(q.rest)
		if status != 0 {
			return nil, status
		}
		return a.setEnabled(q.view, t, on)
	}
}

// enableService is PUT (enable) or DELETE (disable) /service/S[/B].
func (a *poundAPI) enableService(on bool) poundFunc {
	return func(q *poundReq) (any, int) {
		if !strings.HasPrefix(q.rest, "/") {
			return nil, http.StatusNotFound
		}
		t, status := q.view.parseServicePath(poundTarget{lst: -1, svc: -1, be: -1}, q.rest)
		if status != 0 {
			return nil, status
		}
		return a.setEnabled(q.view, t, on)
	}
}

// setEnabled flips the target and answers JSON true. The control socket
// cannot be disabled (Pound: 400), nor can "no listener" (Pound would
// dereference a null listener there).
func (a *poundAPI) setEnabled(v *poundView, t poundTarget, on bool) (any, int) {
	if (t.lst < 0 && t.svc < 0) || v.isControl(t.lst) {
		return nil, http.StatusBadRequest
	}
	if err := a.c.SetEnabled(v.ref(t), on); err != nil {
		return nil, statusOf(err)
	}
	return true, 0
}

// addSession is PUT /session/L/S/B?key=K: pin K to backend B. The reply is
// the service after the change.
func (a *poundAPI) addSession(q *poundReq) (any, int) {
	t, status := a.sessionTarget(q)
	if status != 0 {
		return nil, status
	}
	if t.be < 0 {
		return nil, http.StatusBadRequest
	}
	key, ok := sessionKey(q.r.URL.RawQuery)
	if !ok {
		return nil, http.StatusBadRequest
	}
	ref := q.view.ref(t)
	ref.Backend = -1
	if err := a.c.AddSession(ref, SessionSpec{Key: key, Backend: t.be}); err != nil {
		return nil, statusOf(err)
	}
	return a.serviceAfter(t)
}

// deleteSession is DELETE /session/L/S?key=K. Like Pound, deleting a key
// that does not exist is not an error.
func (a *poundAPI) deleteSession(q *poundReq) (any, int) {
	t, status := a.sessionTarget(q)
	if status != 0 {
		return nil, status
	}
	if t.svc < 0 || t.be >= 0 {
		return nil, http.StatusBadRequest
	}
	key, ok := sessionKey(q.r.URL.RawQuery)
	if !ok {
		return nil, http.StatusBadRequest
	}
	err := a.c.DeleteSession(q.view.ref(t), key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, statusOf(err)
	}
	return a.serviceAfter(t)
}

// sessionTarget resolves the object path of a session endpoint.
func (a *poundAPI) sessionTarget(q *poundReq) (poundTarget, int) {
	if !strings.HasPrefix(q.rest, "/") {
		return poundTarget{}, http.StatusNotFound
	}
	t, status := q.view.parseListenerPath(q.rest)
	if status != 0 {
		return t, status
	}
	if t.svc < 0 || q.view.isControl(t.lst) {
		return t, http.StatusBadRequest
	}
	return t, 0
}

// serviceAfter serialises the target's service from a fresh snapshot, so
// the reply shows the change just made.
func (a *poundAPI) serviceAfter(t poundTarget) (any, int) {
	v := newPoundView(a.c.State())
	if t.lst >= len(v.listeners) {
		return nil, http.StatusNotFound
	}
	svcs := v.services(t.lst)
	if t.svc >= len(svcs) {
		return nil, http.StatusNotFound
	}
	return poundService(&svcs[t.svc], v.st.BackendStats), 0
}

// logTarget resolves /log[/L]: li is the view index (-1 = global) and id
// the identifier as given (nil for global).
func logTarget(v *poundView, rest string) (li int, id *ident, status int) {
	if rest == "" || rest == "/" {
		return -1, nil, 0
	}
	got, r := getIdent(rest)
	if r != "" {
		return 0, nil, http.StatusBadRequest
	}
	if li = v.findListener(got); li < 0 {
		return 0, nil, http.StatusNotFound
	}
	return li, &got, 0
}

// getLog is GET /log[/L].
func (a *poundAPI) getLog(q *poundReq) (any, int) {
	li, id, status := logTarget(q.view, q.rest)
	if status != 0 {
		return nil, status
	}
	level := q.view.st.LogLevel
	if li >= 0 {
		level = q.view.listeners[li].LogLevel
	}
	return logObject(id, level, q.view.st.LogLevel), 0
}

// setLog is PUT /log[/L]?level=NAME; the Controller validates the name.
func (a *poundAPI) setLog(q *poundReq) (any, int) {
	raw, ok := queryParam(q.r.URL.RawQuery, "level")
	if !ok {
		return nil, http.StatusBadRequest
	}
	level, err := url.QueryUnescape(raw)
	if err != nil || level == "" {
		return nil, http.StatusBadRequest
	}
	return a.changeLog(q, level)
}

// clearLog is DELETE /log[/L]: a listener falls back to the global level;
// the global level becomes "null" (Pound sets format 0).
func (a *poundAPI) clearLog(q *poundReq) (any, int) {
	return a.changeLog(q, "")
}

// changeLog applies a log level change and replies with the new levels.
func (a *poundAPI) changeLog(q *poundReq, level string) (any, int) {
	li, id, status := logTarget(q.view, q.rest)
	if status != 0 {
		return nil, status
	}
	if q.view.isControl(li) {
		return nil, http.StatusBadRequest
	}
	set := level
	if li < 0 && level == "" {
		set = "null"
	}
	if err := a.c.SetLogLevel(q.view.stateIndex(li), set); err != nil {
		return nil, statusOf(err)
	}
	v := newPoundView(a.c.State())
	shown := ""
	switch {
	case level == "":
		// Pound answers a delete with level null.
	case li < 0:
		shown = v.st.LogLevel
	case li < len(v.listeners):
		shown = v.listeners[li].LogLevel
	}
	return logObject(id, shown, v.st.LogLevel), 0
}
