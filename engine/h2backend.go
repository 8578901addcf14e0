package engine

import (
	"crypto/tls"

	"lbd/backend"
	"lbd/config"
)

// backendHTTP2 completes o for a backend with Protocol h2 (TLS's ALPN is
// set by backendTLSConfig).
func backendHTTP2(o *backend.Options, cb *config.Backend) {
	if cb.Rare().Protocol == config.ProtocolAuto {
		o.HTTP2 = true // its pool is used once the service's backends chose h2
		return
	}
	if cb.Rare().Protocol != config.ProtocolH2 {
		return
	}
	o.HTTP2 = true
	if cb.Rare().GRPCHealth != nil {
		o.GRPCCheck, o.GRPCService = true, cb.Rare().GRPCHealth.Service
	}
}

// http2Tag distinguishes backends by protocol and health check in
// backendKey: a reload that changes them builds a new backend, with a
// new connection pool.
func http2Tag(cb *config.Backend) string {
	if cb.Rare().Protocol == config.ProtocolAuto {
		return "!auto"
	}
	if cb.Rare().Protocol != config.ProtocolH2 {
		return ""
	}
	if cb.Rare().GRPCHealth != nil {
		return "!h2!grpc=" + cb.Rare().GRPCHealth.Service
	}
	return "!h2"
}

// backendALPN is what an HTTPS backend's TLS handshake offers (Protocol
// auto: TLSDialAuto sets it per connection).
func backendALPN(cb *config.Backend) []string {
	if cb.Rare().Protocol == config.ProtocolH2 {
		return []string{"h2"}
	}
	return []string{"http/1.1"}
}

// backendTLSDial is the dial of an HTTPS backend with TLS settings tc.
func backendTLSDial(o *backend.Options, cb *config.Backend, tc *tls.Config) backend.DialFunc {
	if cb.Rare().Protocol == config.ProtocolAuto {
		o.AutoALPN = &backend.AutoALPN{}
		return backend.TLSDialAuto(o.DialContext, tc, o.Address, o.AutoALPN)
	}
	return backend.TLSDial(o.DialContext, tc, o.Address)
}
