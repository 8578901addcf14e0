package engine

import (
	"lbd/backend"
	"lbd/config"
)

// backendHTTP2 completes o for a backend with Protocol h2 (TLS's ALPN is
// set by backendTLSConfig).
func backendHTTP2(o *backend.Options, cb *config.Backend) {
	if cb.Protocol != config.ProtocolH2 {
		return
	}
	o.HTTP2 = true
	if cb.GRPCHealth != nil {
		o.GRPCCheck, o.GRPCService = true, cb.GRPCHealth.Service
	}
}

// http2Tag distinguishes backends by protocol and health check in
// backendKey: a reload that changes them builds a new backend, with a
// new connection pool.
func http2Tag(cb *config.Backend) string {
	if cb.Protocol != config.ProtocolH2 {
		return ""
	}
	if cb.GRPCHealth != nil {
		return "!h2!grpc=" + cb.GRPCHealth.Service
	}
	return "!h2"
}

// backendALPN is what an HTTPS backend's TLS handshake offers.
func backendALPN(cb *config.Backend) []string {
	if cb.Protocol == config.ProtocolH2 {
		return []string{"h2"}
	}
	return []string{"http/1.1"}
}
