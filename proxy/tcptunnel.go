package proxy

import (
	"time"

	"lbd/backend"
	"lbd/service"
)

// serveTunnel relays a connection of a Tunnel listener to one of its
// backends, byte for byte in both directions, without reading HTTP. The
// backend is chosen by the listener's one service (balancing, liveness,
// disabled backends) and the tunnel ends when both sides have closed or
// nothing moved for the backend's TimeOut.
func (c *conn) serveTunnel(st *Listener) {
	if !c.srv.Enabled() || len(st.Router.Services) == 0 {
		return
	}
	svc := st.Router.Services[0]
	if !svc.Enabled() {
		return
	}
	bc := c.dialTunnel(st, svc)
	if bc == nil {
		return
	}
	defer bc.Close()
	tunnel(c.nc, bc.Conn, bc.Backend().TimeOut())
}

// dialTunnel connects to a backend, trying another one when a connect
// fails (which also marks that backend dead until a probe revives it).
func (c *conn) dialTunnel(st *Listener, svc *service.Service) *backend.Conn {
	tries := st.tries()
	for i := 0; i < tries; i++ {
		b := svc.Pick(nil)
		if b == nil {
			return nil
		}
		if bc, err := b.Dial(time.Time{}); err == nil {
			return bc
		}
	}
	return nil
}
