package h2backend

import (
	"context"
	"net"
)

// maxOpenAttempts bounds the connections Open tries when each is lost
// (GOAWAY, closed) before the stream starts: a backend that sends GOAWAY
// at once must not keep a request dialling.
const maxOpenAttempts = 3

// Open starts a request on one of the pool's frame-level connections,
// opening one when every connection is at the backend's
// SETTINGS_MAX_CONCURRENT_STREAMS and the bound allows: block is its
// header block (RequestBlock); data, if any, is the start of the body,
// sent with it as far as the backend's initial windows allow (the rest
// is for WriteData); end says the request ends there. The connections
// count against Options.MaxConns with the Transport's. An error that is
// ErrUnprocessed, a *DialError of the dialler or ErrPoolFull means
// nothing reached the backend.
func (p *Pool) Open(ctx context.Context, block, data []byte, end bool) (*Stream, int, error) {
	for attempt := 1; ; attempt++ {
		c, err := p.reserveConn(ctx)
		if err != nil {
			return nil, 0, err
		}
		s := newStream()
		sent, err := c.open(s, block, data, end)
		if err == nil {
			p.frameStreams.Add(1)
			return s, sent, nil
		}
		c.forget(s, false, 0)
		if !c.usable() && attempt < maxOpenAttempts {
			continue // lost meanwhile: try another connection
		}
		return nil, 0, err
	}
}

// reserveConn takes a stream slot on a connection, dialling one if
// needed.
func (p *Pool) reserveConn(ctx context.Context) (*conn, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, net.ErrClosed
		}
		for _, c := range p.frames {
			if c.reserve() {
				p.mu.Unlock()
				return c, nil
			}
		}
		if p.frameDialing {
			// One connect at a time: the connection it brings takes
			// the backend's whole stream limit, typically 100.
			p.dialed.Wait()
			continue
		}
		if len(p.conns)+len(p.frames)+p.dialing >= p.opts.MaxConns {
			p.mu.Unlock()
			return nil, ErrPoolFull
		}
		p.dialing++
		p.frameDialing = true
		p.mu.Unlock()
		c, err := p.dialFrames(ctx)
		p.mu.Lock()
		p.dialing--
		p.frameDialing = false
		p.dialed.Broadcast()
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		if p.closed {
			p.mu.Unlock()
			c.shutdown()
			return nil, net.ErrClosed
		}
		p.frames = append(p.frames, c)
	}
}

func (p *Pool) dialFrames(ctx context.Context) (*conn, error) {
	if _, ok := ctx.Deadline(); !ok && p.opts.ConnTO > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.opts.ConnTO)
		defer cancel()
	}
	return p.dialConn(ctx)
}

// forgetConn drops a connection that takes no new streams.
func (p *Pool) forgetConn(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.frames {
		if x == c {
			p.frames = append(p.frames[:i], p.frames[i+1:]...)
			clear(p.frames[len(p.frames):cap(p.frames)][:1])
			return
		}
	}
}

// Streams counts the requests sent with Open (relayed frame by frame)
// and with RoundTrip (through x/net's Transport).
func (p *Pool) Streams() (frames, transport uint64) {
	return p.frameStreams.Load(), p.transportStreams.Load()
}
