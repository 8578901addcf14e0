package config

import (
	"strings"

	"lbd/parser"
)

// HTTP/2 backends (an lbd extension, in both dialects): `Protocol h2` in
// a backend block speaks HTTP/2 to it, over TLS with ALPN h2 when the
// backend is HTTPS, else cleartext with prior knowledge (h2c);
// `Protocol auto` (HTTPS only) offers h2 and http/1.1 by ALPN and speaks
// what the backends choose; and `GrpcHealthCheck ["service"]` probes it
// with gRPC's health service.

// Backend protocols.
const (
	ProtocolHTTP1 = ""     // HTTP/1.1, Pound's and zproxy's only protocol
	ProtocolH2    = "h2"   // HTTP/2
	ProtocolAuto  = "auto" // decided by ALPN (backend.ALPNChoice)
)

// GRPCHealth is a backend's gRPC health check.
type GRPCHealth struct {
	Pos Locus `json:"pos"`
	// Service is the name asked about; "" asks about the server.
	Service string `json:"service"`
}

func addHTTP2BackendDirectives(t table[*Backend]) {
	t.add("Protocol", "[sl]", func(b *builder, be *Backend, n *parser.Node, u []unit) {
		be.SetRare().ProtocolPos = LocusOf(stmtSpan(n))
		switch strings.ToLower(u[0].arg.Text) {
		case "h2", "http/2":
			be.SetRare().Protocol = ProtocolH2
		case "http/1.1", "http1", "http/1":
			be.SetRare().Protocol = ProtocolHTTP1
		case "auto":
			be.SetRare().Protocol = ProtocolAuto
		default:
			b.errorf(u[0].arg.Span, "unknown backend protocol %q: use h2, http/1.1 or auto", u[0].arg.Text)
		}
	})
	t.add("GrpcHealthCheck", "[sl]?", func(_ *builder, be *Backend, n *parser.Node, u []unit) {
		h := &GRPCHealth{Pos: LocusOf(stmtSpan(n))}
		if len(u) == 1 {
			h.Service = u[0].arg.Text
		}
		be.SetRare().GRPCHealth = h
	})
}

// addH2CDirective registers HTTP2 for ListenHTTP: accept cleartext
// HTTP/2 with prior knowledge (h2c) beside HTTP/1.1. ListenHTTPS has
// its own HTTP2, which offers h2 by ALPN.
func addH2CDirective(t table[*Listener]) {
	t.add("HTTP2", "b", func(_ *builder, l *Listener, _ *parser.Node, u []unit) { l.H2C = boolArg(u[0]) })
}

// checkHTTP2Backends applies the rules of HTTP/2 backends to a service:
// a gRPC health check needs HTTP/2, and a service's backends speak one
// protocol (a request is read and forwarded for the one protocol before
// its backend is picked).
func (b *builder) checkHTTP2Backends(s *Service) {
	var first *Backend
	for _, list := range [][]*Backend{s.Backends, s.Rare().Emergency} {
		for _, be := range list {
			if be.Kind != BackendRegular {
				continue
			}
			if be.Rare().GRPCHealth != nil && be.Rare().Protocol != ProtocolH2 {
				b.errorf(be.Rare().GRPCHealth.Pos.Span(), "GrpcHealthCheck needs an HTTP/2 backend (Protocol h2)")
			}
			if be.Rare().Protocol == ProtocolAuto && !be.HTTPS {
				b.errorf(be.Rare().ProtocolPos.Span(), "Protocol auto needs an HTTPS backend: the protocol is chosen by ALPN, in the TLS handshake")
			}
			if first == nil {
				first = be
				continue
			}
			if be.Rare().Protocol != first.Rare().Protocol {
				b.errorf(be.Pos.Span(), "service mixes backend protocols (Protocol h2, auto, http/1.1)")
				b.followf(first.Pos.Span(), "the service's first backend is here")
				return
			}
		}
	}
}
