package adminapi

import (
	"errors"
	"net/http"
)

// GET endpoints. zproxy looks the service up before anything else, so a
// bad listener in a service path yields the service message.

func (a *zproxyAPI) getListeners(q *zreq) zreply {
	ls := make(jarray, len(q.st.Listeners))
	for i := range q.st.Listeners {
		ls[i] = zListener(i, &q.st.Listeners[i])
	}
	return zjson(ls)
}

func (a *zproxyAPI) getListener(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.li < 0 {
		return p.listenerNotFound()
	}
	return zjson(zListener(p.li, p.listener()))
}

func (a *zproxyAPI) getServices(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.li < 0 {
		return p.listenerNotFound()
	}
	return zjson(zServices(p.listener().Services))
}

func (a *zproxyAPI) getService(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.si < 0 {
		return p.serviceNotFound()
	}
	return zjson(zService(p.service()))
}

func (a *zproxyAPI) getBackends(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.si < 0 {
		return p.serviceNotFound()
	}
	return zjson(zBackends(p.service()))
}

func (a *zproxyAPI) getBackend(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.bi < 0 {
		return p.backendNotFound(p.bid)
	}
	s := p.service()
	return zjson(zBackend(s, &s.Backends[p.bi]))
}

func (a *zproxyAPI) getServiceSessions(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.si < 0 {
		return p.serviceNotFound()
	}
	return zjson(zSessions(p.service()))
}

func (a *zproxyAPI) getSessions(q *zreq) zreply {
	return zjson(zAllSessions(q.st))
}

// reload is PATCH /config: re-read the configuration file. A refusal
// keeps zproxy's reason and adds "errors", every error of the file.
func (a *zproxyAPI) reload(q *zreq) zreply {
	if err := a.c.Reload(); err != nil {
		errs := jarray{}
		for _, line := range reloadRefusal(err).errors {
			errs = append(errs, line)
		}
		o := jobject{}.add("result", "error").add("reason", "Failed to reload configuration.").add("errors", errs)
		return zreply{status: http.StatusInternalServerError, body: encodeJSON(o, zproxyCompact)}
	}
	return zok(http.StatusOK)
}

// setBackendStatus is PATCH .../backend/B/status {"status":"active"|"disabled"}.
func (a *zproxyAPI) setBackendStatus(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.bi < 0 {
		return p.backendNotFound(p.bid)
	}
	var body statusBody
	err := decodeStrict(q.body, &body)
	if err == nil && body.Status != "active" && body.Status != "disabled" {
		err = errors.New("bad status")
	}
	if err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Invalid JSON format.", err))
	}
	ref := p.ref()
	ref.Backend = p.bi
	if err := a.c.SetEnabled(ref, body.Status == "active"); err != nil {
		if errors.Is(err, ErrNotFound) {
			return p.backendNotFound(p.bid)
		}
		return zerr(http.StatusInternalServerError, "Failed to set backend status")
	}
	recordEnable(a.c, q.r, ref, body.Status == "active")
	return zok(http.StatusOK)
}

// addBackend is PUT .../backends: a backend added at runtime (201).
func (a *zproxyAPI) addBackend(q *zreq) zreply {
	var body backendBody
	if err := decodeStrict(q.body, &body); err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Invalid JSON format.", err))
	}
	spec, msg := body.spec()
	if msg != "" {
		return zerr(http.StatusBadRequest, "%s", msg)
	}
	p := resolve(q.st, q.vars)
	if p.si < 0 {
		return p.serviceNotFound()
	}
	id := spec.ID
	if id == "" {
		id = backendID(&Backend{Address: spec.Address, Port: spec.Port})
	}
	if p.findBackendID(id) >= 0 {
		return zerr(http.StatusConflict, "Backend %s already exists.", id)
	}
	err := a.c.AddBackend(p.ref(), spec)
	switch {
	case err == nil:
		return zok(http.StatusCreated)
	case errors.Is(err, ErrNotFound):
		return p.serviceNotFound()
	case errors.Is(err, ErrInvalid):
		return zerr(http.StatusBadRequest, "Invalid JSON format: %v.", err)
	case errors.Is(err, ErrConflict):
		return zerr(http.StatusConflict, "Backend %s already exists.", id)
	}
	return zerr(http.StatusInternalServerError, "Failed to load new configuration.")
}

// addSession is PUT .../sessions {"id", "backend-id", "last-seen"?} (201).
// An existing key is not an error: like zproxy, only its timestamp is
// refreshed and it keeps its backend.
func (a *zproxyAPI) addSession(q *zreq) zreply {
	var body sessionBody
	if err := decodeStrict(q.body, &body); err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Invalid JSON format.", err))
	}
	if str(body.BackendID) == "" {
		return zerr(http.StatusBadRequest, "Invalid JSON format. Expected 'backend-id' variable.")
	}
	p := resolve(q.st, q.vars)
	bi := -1
	if p.si >= 0 {
		bi = p.findBackendID(*body.BackendID)
	}
	if bi < 0 {
		return p.backendNotFound(*body.BackendID)
	}
	key := str(body.ID)
	if key == "" {
		return zerr(http.StatusBadRequest, "Invalid JSON format. Expected 'id' variable.")
	}
	spec, err := body.spec(key, bi)
	if err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Invalid JSON format.", err))
	}
	if i := p.service().findSession(key); i >= 0 {
		spec.Backend = p.service().Sessions[i].Backend
		err = a.c.MoveSession(p.ref(), spec)
	} else {
		err = a.c.AddSession(p.ref(), spec)
	}
	if err != nil {
		return a.sessionFailure(&p, err, "Unable to create session. Perhaps it already exists.")
	}
	return zok(http.StatusCreated)
}

// moveSession is PATCH .../session/K {"backend-id", "last-seen"}.
func (a *zproxyAPI) moveSession(q *zreq) zreply {
	var body sessionBody
	if err := decodeStrict(q.body, &body); err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Invalid JSON format.", err))
	}
	if body.ID != nil {
		return zerr(http.StatusBadRequest, "Invalid JSON format: the session id is taken from the path.")
	}
	p := resolve(q.st, q.vars)
	bid := str(body.BackendID)
	bi := -1
	if p.si >= 0 {
		bi = p.findBackendID(bid)
	}
	if bi < 0 {
		return p.backendNotFound(bid)
	}
	key := q.vars["key"]
	spec, err := body.spec(key, bi)
	if err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Invalid JSON format.", err))
	}
	if p.service().findSession(key) < 0 {
		return zerr(http.StatusNotFound, "Could not find session with ID %s.", key)
	}
	if err := a.c.MoveSession(p.ref(), spec); err != nil {
		if errors.Is(err, ErrNotFound) {
			return zerr(http.StatusNotFound, "Could not find session with ID %s.", key)
		}
		return a.sessionFailure(&p, err, "Unable to move session.")
	}
	return zok(http.StatusOK)
}

// sessionFailure maps a Controller error of a session change.
func (a *zproxyAPI) sessionFailure(p *zpath, err error, conflict string) zreply {
	switch {
	case errors.Is(err, ErrConflict):
		return zerr(http.StatusConflict, "%s", conflict)
	case errors.Is(err, ErrNotFound):
		return p.shortServiceNotFound()
	case errors.Is(err, ErrInvalid):
		return zerr(http.StatusBadRequest, "Invalid request: %s.", reasonOf(err))
	}
	return zerr(http.StatusInternalServerError, "Failed to create session")
}
