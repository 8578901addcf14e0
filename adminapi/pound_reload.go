package adminapi

// reload is lbd's PATCH /config on the Pound socket: it re-reads the
// configuration file and answers true, or a refusal (400 for a
// configuration that does not load, with each of its errors; the running
// one stays in place).
func (a *poundAPI) reload(q *poundReq) (any, *apiError) {
	if err := a.c.Reload(); err != nil {
		return nil, reloadRefusal(err)
	}
	return true, nil
}
