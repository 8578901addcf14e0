package adminapi

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// listAll is GET /: the full listing.
func (a *poundAPI) listAll(q *poundReq) (any, *apiError) {
	return q.view.all(), nil
}

// core is GET /core.
func (a *poundAPI) core(q *poundReq) (any, *apiError) {
	return poundCore(&q.view.st.Core), nil
}

// listListener is GET /listener[/L[/S[/B]]]; "/listener" and "/listener/-"
// alone are the full listing.
func (a *poundAPI) listListener(q *poundReq) (any, *apiError) {
	t, e := q.view.parseListenerPath(q.rest)
	if e != nil {
		return nil, e
	}
	return q.view.object(t), nil
}

// listService is GET /service/S[/B] (global services).
func (a *poundAPI) listService(q *poundReq) (any, *apiError) {
	t, e := q.view.parseServicePath(poundTarget{lst: -1, svc: -1, be: -1}, q.rest)
	if e != nil {
		return nil, e
	}
	return q.view.object(t), nil
}

// enableListener is PUT (enable) or DELETE (disable) /listener/L[/S[/B]].
func (a *poundAPI) enableListener(on bool) poundFunc {
	return func(q *poundReq) (any, *apiError) {
		if !strings.HasPrefix(q.rest, "/") {
			return nil, errNoObject
		}
		t, e := q.view.parseListenerPath(q.rest)
		if e != nil {
			return nil, e
		}
		return a.setEnabled(q, t, on)
	}
}

// enableService is PUT (enable) or DELETE (disable) /service/S[/B].
func (a *poundAPI) enableService(on bool) poundFunc {
	return func(q *poundReq) (any, *apiError) {
		if !strings.HasPrefix(q.rest, "/") {
			return nil, errNoObject
		}
		t, e := q.view.parseServicePath(poundTarget{lst: -1, svc: -1, be: -1}, q.rest)
		if e != nil {
			return nil, e
		}
		return a.setEnabled(q, t, on)
	}
}

// setEnabled flips the target and answers JSON true. The control socket
// cannot be disabled (Pound: 400), nor can "no listener" (Pound would
// dereference a null listener there).
func (a *poundAPI) setEnabled(q *poundReq, t poundTarget, on bool) (any, *apiError) {
	v := q.view
	switch {
	case t.lst < 0 && t.svc < 0:
		return nil, refuse(http.StatusBadRequest, "name a listener, a service or a backend to enable or disable")
	case v.isControl(t.lst):
		return nil, errControl
	}
	if err := a.c.SetEnabled(v.ref(t), on); err != nil {
		return nil, poundControllerRefusal(err)
	}
	recordEnable(a.c, q.r, v.ref(t), on)
	return true, nil
}

// Refusals several endpoints share.
var (
	errNoObject = &apiError{status: http.StatusNotFound, reason: "name the object: /L[/S[/B]]"}
	errControl  = &apiError{status: http.StatusBadRequest, reason: "listener 0 is the control socket itself: it cannot be changed"}
	errNoKey    = &apiError{status: http.StatusBadRequest, reason: "give the session key as ?key=K (at most 127 bytes)"}
)

// addSession is PUT /session/L/S/B?key=K: pin K to backend B. The reply is
// the service after the change.
func (a *poundAPI) addSession(q *poundReq) (any, *apiError) {
	t, e := a.sessionTarget(q)
	if e != nil {
		return nil, e
	}
	if t.be < 0 {
		return nil, refuse(http.StatusBadRequest, "a session is added to a backend: /session/L/S/B?key=K")
	}
	key, ok := sessionKey(q.r.URL.RawQuery)
	if !ok {
		return nil, errNoKey
	}
	ref := q.view.ref(t)
	ref.Backend = -1
	if err := a.c.AddSession(ref, SessionSpec{Key: key, Backend: t.be}); err != nil {
		return nil, sessionRefusal(q, err)
	}
	return a.serviceAfter(q, t)
}

// deleteSession is DELETE /session/L/S?key=K. Like Pound, deleting a key
// that does not exist is not an error.
func (a *poundAPI) deleteSession(q *poundReq) (any, *apiError) {
	t, e := a.sessionTarget(q)
	if e != nil {
		return nil, e
	}
	if t.be >= 0 {
		return nil, refuse(http.StatusBadRequest, "a session is deleted from a service: /session/L/S?key=K")
	}
	key, ok := sessionKey(q.r.URL.RawQuery)
	if !ok {
		return nil, errNoKey
	}
	err := a.c.DeleteSession(q.view.ref(t), key)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, sessionRefusal(q, err)
	}
	return a.serviceAfter(q, t)
}

// sessionRefusal is a failed session change, naming the object as the
// request did ("/session/1/0/1: service has no sessions").
func sessionRefusal(q *poundReq, err error) *apiError {
	e := poundControllerRefusal(err)
	e.reason = q.r.URL.Path + ": " + e.reason
	return e
}

// sessionTarget resolves the object path of a session endpoint.
func (a *poundAPI) sessionTarget(q *poundReq) (poundTarget, *apiError) {
	if !strings.HasPrefix(q.rest, "/") {
		return poundTarget{}, errNoObject
	}
	t, e := q.view.parseListenerPath(q.rest)
	switch {
	case e != nil:
		return t, e
	case q.view.isControl(t.lst):
		return t, errControl
	case t.svc < 0:
		return t, refuse(http.StatusBadRequest, "sessions belong to a service: name it, /L/S")
	}
	return t, nil
}

// serviceAfter serialises the target's service from a fresh snapshot, so
// the reply shows the change just made (in the form the request asked
// for: ?sessions=count gives the count, not the table).
func (a *poundAPI) serviceAfter(q *poundReq, t poundTarget) (any, *apiError) {
	v, e := a.view(q.r, false)
	if e != nil {
		return nil, e
	}
	if t.lst >= len(v.listeners) || t.svc >= len(v.services(t.lst)) {
		return nil, errGone
	}
	return poundService(&v.services(t.lst)[t.svc], v.opts), nil
}

// errGone is a change whose object a concurrent reload removed.
var errGone = &apiError{status: http.StatusNotFound, reason: "the object is gone: the configuration was reloaded meanwhile"}

// poundControllerRefusal is controllerRefusal on the Pound socket. The
// path was resolved against a snapshot just before, so the Controller's
// "not found" means a reload removed the object; its message, which
// numbers listeners from 0 as the configuration does, is not shown.
func poundControllerRefusal(err error) *apiError {
	if errors.Is(err, ErrNotFound) {
		return errGone
	}
	return controllerRefusal(err)
}

// logTarget resolves /log[/L]: li is the view index (-1 = global) and id
// the identifier as given (nil for global).
func logTarget(v *poundView, rest string) (li int, id *ident, e *apiError) {
	if rest == "" || rest == "/" {
		return -1, nil, nil
	}
	got, r := getIdent(rest)
	if r != "" {
		return 0, nil, refuse(http.StatusBadRequest, "a log level belongs to a listener or is global: /log[/L]")
	}
	if li = v.findListener(got); li < 0 {
		return 0, nil, refuse(http.StatusNotFound, "listener %s not found", segment(rest))
	}
	return li, &got, nil
}

// getLog is GET /log[/L].
func (a *poundAPI) getLog(q *poundReq) (any, *apiError) {
	li, id, e := logTarget(q.view, q.rest)
	if e != nil {
		return nil, e
	}
	level := q.view.st.LogLevel
	if li >= 0 {
		level = q.view.listeners[li].LogLevel
	}
	return logObject(id, level, q.view.st.LogLevel), nil
}

// setLog is PUT /log[/L]?level=NAME; the Controller validates the name.
func (a *poundAPI) setLog(q *poundReq) (any, *apiError) {
	raw, ok := queryParam(q.r.URL.RawQuery, "level")
	level, err := url.QueryUnescape(raw)
	if !ok || err != nil || level == "" {
		return nil, refuse(http.StatusBadRequest, "give the log format as ?level=NAME")
	}
	return a.changeLog(q, level)
}

// clearLog is DELETE /log[/L]: a listener falls back to the global level;
// the global level becomes "null" (Pound sets format 0).
func (a *poundAPI) clearLog(q *poundReq) (any, *apiError) {
	return a.changeLog(q, "")
}

// changeLog applies a log level change and replies with the new levels.
func (a *poundAPI) changeLog(q *poundReq, level string) (any, *apiError) {
	li, id, e := logTarget(q.view, q.rest)
	if e != nil {
		return nil, e
	}
	if q.view.isControl(li) {
		return nil, errControl
	}
	set := level
	if li < 0 && level == "" {
		set = "null"
	}
	if err := a.c.SetLogLevel(q.view.stateIndex(li), set); err != nil {
		return nil, poundControllerRefusal(err)
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
	return logObject(id, shown, v.st.LogLevel), nil
}
