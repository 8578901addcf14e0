package backend

import (
	"context"
	"net"
	"time"

	"lbd/h2backend"
)

// HTTP/2 backends: requests are streams multiplexed over a few
// connections (package h2backend), so what Active counts for them, and
// ConnLimit bounds, is streams in flight. Their connects still go
// through Dial: a failed one marks the backend dead as for HTTP/1.1.

// HTTP2 returns the backend's stream pool, or nil for an HTTP/1.1
// backend.
func (b *Backend) HTTP2() *h2backend.Pool {
	if b.rare == nil {
		return nil
	}
	return b.rare.h2
}

// StreamStarted counts a request sent to an HTTP/2 backend as active.
func (b *Backend) StreamStarted() {
	b.active.Add(1)
	b.loadChanged()
}

// StreamEnded ends what StreamStarted counted.
func (b *Backend) StreamEnded() {
	b.active.Add(-1)
	b.loadChanged()
}

// dialMux opens a connection for the HTTP/2 pool: Dial, with the
// connection itself not counted as active.
func (b *Backend) dialMux(ctx context.Context) (net.Conn, error) {
	deadline, _ := ctx.Deadline() // zero when none: ConnTO alone bounds it
	c, err := b.Dial(deadline)
	if err != nil {
		return nil, err
	}
	c.release()
	return c, nil
}

// initHTTP2 sets up the stream pool of a backend with Options.HTTP2.
func (b *Backend) initHTTP2(o Options) {
	if !o.HTTP2 {
		return
	}
	b.setRare().h2 = h2backend.New(h2backend.Options{Dial: b.dialMux, TLS: o.HTTPS, ConnTO: b.connTO})
	b.grpcCheck = o.GRPCCheck
	if o.GRPCService != "" {
		b.setRare().grpcService = o.GRPCService
	}
}

// probeGRPC runs the gRPC health check within ConnTO.
func (b *Backend) probeGRPC(parent context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, b.connTO)
	defer cancel()
	authority, service := b.address, ""
	if b.rare != nil {
		service = b.rare.grpcService
		if b.rare.serverName != "" {
			authority = b.rare.serverName
		}
	}
	err := b.HTTP2().HealthCheck(ctx, authority, service)
	if parent.Err() == nil {
		b.probed(time.Since(start), err == nil)
	}
	return err
}
