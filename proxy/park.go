package proxy

import "lbd/backend"

// maxParked is how many backend connections one client connection keeps
// between its requests (one per backend it last used).
const maxParked = 4

// unpark returns the connection this client parked for b, if any.
func (c *conn) unpark(b *backend.Backend) *backend.Conn {
	for i, bc := range c.parked {
		if bc != nil && bc.Backend() == b {
			c.parked[i] = nil
			if b.Unpark(bc) {
				return bc
			}
			return nil
		}
	}
	return nil
}

// park keeps a reusable backend connection for this client's next
// request; the oldest parked one goes back to the shared pool if all
// places are taken.
func (c *conn) park(bc *backend.Conn) {
	b := bc.Backend()
	if !b.Park(bc) {
		return
	}
	for i := range c.parked {
		if c.parked[i] == nil {
			c.parked[i] = bc
			return
		}
	}
	c.toPool(c.parked[0])
	copy(c.parked[:], c.parked[1:])
	c.parked[maxParked-1] = bc
}

// toPool hands a parked connection to its backend's shared pool.
func (c *conn) toPool(bc *backend.Conn) {
	if b := bc.Backend(); b.Unpark(bc) {
		b.Put(bc)
	}
}

// unparkAll releases every parked connection when the client leaves.
func (c *conn) unparkAll() {
	for i, bc := range c.parked {
		if bc != nil {
			c.toPool(bc)
			c.parked[i] = nil
		}
	}
}
