package adminapi

// reload is lbd's PATCH /config on the Pound socket: it re-reads the
// configuration file and answers true, or an error page (400 for a
// configuration that does not load; the running one stays in place).
func (a *poundAPI) reload(q *poundReq) (any, int) {
	if err := a.c.Reload(); err != nil {
		if s := statusOf(err); s != 500 {
			return nil, s
		}
		return nil, 400
	}
	return true, 0
}
