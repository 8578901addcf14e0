package proxy

import (
	"lbd/backend"
	"lbd/service"
)

// learnSession lets the service learn session keys from the response and
// queues the COOKIEINSERT cookie for the response head.
func (c *conn) learnSession(svc *service.Service, b *backend.Backend) {
	if line := svc.Learn(c.resp.Headers, b); line != nil {
		c.ex.respExtra = append(c.ex.respExtra, line...)
	}
}
