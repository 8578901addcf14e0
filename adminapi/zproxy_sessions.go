package adminapi

import (
	"errors"
	"net/http"
	"strconv"
)

// syncService is PATCH .../sessions with a JSON array: replace the
// service's table. Unlike zproxy, every backend is checked before the
// table is touched, so a bad entry no longer leaves it flushed.
func (a *zproxyAPI) syncService(q *zreq) zreply {
	var body []sessionBody
	if err := decodeArray(q.body, &body); err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Failed to decode JSON.", err))
	}
	p := resolve(q.st, q.vars)
	if p.li < 0 {
		return p.listenerNotFound()
	}
	if p.si < 0 {
		return p.shortServiceNotFound()
	}
	specs, fail := sessionSpecs(&p, body)
	if fail != nil {
		return *fail
	}
	if err := a.c.SyncSessions(p.ref(), specs); err != nil {
		return a.sessionFailure(&p, err, "Failed to create session")
	}
	return zok(http.StatusOK)
}

// sessionSpecs converts sync entries of the service p, or returns the
// error reply for the first bad one (zproxy: 500 for a missing backend).
func sessionSpecs(p *zpath, body []sessionBody) ([]SessionSpec, *zreply) {
	specs := make([]SessionSpec, 0, len(body))
	for _, b := range body {
		bid := str(b.BackendID)
		bi := p.findBackendID(bid)
		if bi < 0 {
			r := zerr(http.StatusInternalServerError, "Backend %s doesn't exist.", bid)
			return nil, &r
		}
		if str(b.ID) == "" {
			r := zerr(http.StatusBadRequest, "Failed to decode JSON: session without 'id'.")
			return nil, &r
		}
		spec, err := b.spec(*b.ID, bi)
		if err != nil {
			r := zerr(http.StatusBadRequest, "%s", reason("Failed to decode JSON.", err))
			return nil, &r
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// syncAll is PATCH /sessions: per listener and service, replace the table.
// zproxy answers every failure here with 500; the whole body is checked
// before anything changes.
func (a *zproxyAPI) syncAll(q *zreq) zreply {
	var body []listenerSessions
	if err := decodeArray(q.body, &body); err != nil {
		status := http.StatusInternalServerError
		if isStrict(err) {
			status = http.StatusBadRequest
		}
		return zerr(status, "%s", reason("Failed to decode JSON.", err))
	}
	type job struct {
		ref   Ref
		specs []SessionSpec
	}
	var jobs []job
	for _, l := range body {
		lid := strconv.Itoa(l.ID)
		for _, s := range l.Services {
			p := resolve(q.st, map[string]string{"listener": lid, "service": s.Name})
			if p.li < 0 {
				return zerr(http.StatusInternalServerError, "Listener %d doesn't exist.", l.ID)
			}
			if p.si < 0 || p.service().Name != s.Name {
				return zerr(http.StatusInternalServerError, "Service %s doesn't exist.", s.Name)
			}
			specs, fail := sessionSpecs(&p, s.Sessions)
			if fail != nil {
				return *fail
			}
			jobs = append(jobs, job{p.ref(), specs})
		}
	}
	for _, j := range jobs {
		if err := a.c.SyncSessions(j.ref, j.specs); err != nil {
			return zerr(http.StatusInternalServerError, "Failed to create session")
		}
	}
	return zok(http.StatusOK)
}

// deleteSessions is DELETE .../sessions: no body flushes the table,
// {"id":K} deletes one key, {"backend-id":B} the sessions of B. zproxy
// answers 204 and still sends the ok body.
func (a *zproxyAPI) deleteSessions(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.li < 0 {
		return p.listenerNotFound()
	}
	if p.si < 0 {
		return p.shortServiceNotFound()
	}
	var err error
	if len(q.body) == 0 {
		err = a.c.FlushSessions(p.ref())
		return a.deleted(&p, err)
	}
	var body sessionBody
	if err := decodeStrict(q.body, &body); err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Invalid JSON format.", err))
	}
	switch {
	case str(body.BackendID) != "":
		bi := p.findBackendID(*body.BackendID)
		if bi < 0 {
			return p.backendNotFound(*body.BackendID)
		}
		ref := p.ref()
		ref.Backend = bi
		err = a.c.FlushSessions(ref)
	case str(body.ID) != "":
		if p.service().findSession(*body.ID) < 0 {
			return zerr(http.StatusNotFound, "Could not find session with ID %s", *body.ID)
		}
		if err = a.c.DeleteSession(p.ref(), *body.ID); errors.Is(err, ErrNotFound) {
			return zerr(http.StatusNotFound, "Could not find session with ID %s", *body.ID)
		}
	default:
		// zproxy builds "Invalid flush command." but sends no body.
		return zbare(http.StatusBadRequest, `Invalid flush command: give {"id":K}, {"backend-id":B} or no body.`)
	}
	return a.deleted(&p, err)
}

// deleted is the reply of a successful (or failed) session deletion.
func (a *zproxyAPI) deleted(p *zpath, err error) zreply {
	if err != nil {
		return a.sessionFailure(p, err, "Unable to delete sessions.")
	}
	return zok(http.StatusNoContent)
}
