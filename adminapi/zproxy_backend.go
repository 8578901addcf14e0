package adminapi

import (
	"errors"
	"net/http"
)

// lbd's backend changes on the zproxy socket (extensions; zproxy answers
// both with its bare 400), in the style of its PATCH .../status:
//
//	PATCH  /listener/L/service/S/backend/B  {"weight":N,"priority":N,"connlimit":N}
//	DELETE /listener/L/service/S/backend/B
//
// Both answer {"result":"ok"}, or {"result":"error","reason":...}.

// setBackend is PATCH .../backend/B: any of weight, priority and
// connlimit, at least one.
func (a *zproxyAPI) setBackend(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.bi < 0 {
		return p.backendNotFound(p.bid)
	}
	var body backendSettingsBody
	if err := decodeStrict(q.body, &body); err != nil {
		return zerr(http.StatusBadRequest, "%s", reason("Invalid JSON format.", err))
	}
	if body.Weight == nil && body.Priority == nil && body.ConnLimit == nil {
		return zerr(http.StatusBadRequest, "Invalid JSON format. Expected 'weight', 'priority' or 'connlimit' variable.")
	}
	ref := p.ref()
	ref.Backend = p.bi
	err := a.c.SetBackend(ref, BackendSettings(body))
	return a.backendResult(&p, err)
}

// removeBackend is DELETE .../backend/B, which takes no body.
func (a *zproxyAPI) removeBackend(q *zreq) zreply {
	p := resolve(q.st, q.vars)
	if p.bi < 0 {
		return p.backendNotFound(p.bid)
	}
	if len(q.body) > 0 {
		return zerr(http.StatusBadRequest, "Invalid request: a DELETE of a backend takes no body.")
	}
	ref := p.ref()
	ref.Backend = p.bi
	return a.backendResult(&p, a.c.RemoveBackend(ref))
}

// backendResult maps a Controller error of a backend change.
func (a *zproxyAPI) backendResult(p *zpath, err error) zreply {
	switch {
	case err == nil:
		return zok(http.StatusOK)
	case errors.Is(err, ErrNotFound):
		return p.backendNotFound(p.bid)
	case errors.Is(err, ErrInvalid):
		return zerr(http.StatusBadRequest, "Invalid value: %s.", reasonOf(err))
	case errors.Is(err, ErrConflict):
		return zerr(http.StatusConflict, "%s.", reasonOf(err))
	}
	return zerr(http.StatusInternalServerError, "Failed to change backend %s.", p.bid)
}
