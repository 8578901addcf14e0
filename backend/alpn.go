package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Protocol auto (config/h2backend.go): a service's HTTPS backends offer
// h2 and http/1.1 by ALPN and the service speaks what they choose. lbd
// reads and forwards a request for one protocol before it picks the
// backend, so the choice is the service's, not each connection's: the
// first TLS handshake of any of its backends decides it (a probe's, or
// the one Decide makes before the first request is forwarded), and from
// then on every connection offers only that protocol. A backend that
// cannot speak it fails its connects and is dead, as a Protocol h2
// backend without h2 is. The choice is kept for the backends' lifetime
// (reloads that keep them keep it); a restart, or new backends, decide
// again.

// ALPNChoice is a service's protocol under Protocol auto.
type ALPNChoice struct {
	v  atomic.Int32 // alpnUnknown, alpnHTTP1, alpnH2
	mu sync.Mutex   // one Decide at a time
}

const (
	alpnUnknown int32 = iota
	alpnHTTP1
	alpnH2
)

// AutoALPN is a backend's link to its service's ALPNChoice, set when
// the service is built (ShareALPN) and read by every TLS dial.
type AutoALPN struct {
	p atomic.Pointer[ALPNChoice]
}

// errALPNSettled: a handshake chose what the service does not speak
// (only when two backends disagree, or while a choice is being made).
var errALPNSettled = errors.New("the backend chose another protocol by ALPN than its service's other backends")

// offer is what a handshake offers now: both until the choice is made.
func (a *ALPNChoice) offer() []string {
	switch a.v.Load() {
	case alpnH2:
		return []string{"h2"}
	case alpnHTTP1:
		return []string{"http/1.1"}
	}
	return []string{"h2", "http/1.1"}
}

// settle records the protocol a handshake chose, when none was chosen
// yet, and checks it against the choice.
func (a *ALPNChoice) settle(negotiated string) error {
	got := alpnHTTP1 // no ALPN answer: HTTP/1.1 (RFC 7301 §3.2)
	if negotiated == "h2" {
		got = alpnH2
	}
	if a.v.CompareAndSwap(alpnUnknown, got) || a.v.Load() == got {
		return nil
	}
	if got == alpnHTTP1 {
		return errNoH2
	}
	return errALPNSettled
}

// Known reports whether the choice is made, and whether it is h2.
func (a *ALPNChoice) Known() (h2, known bool) {
	v := a.v.Load()
	return v == alpnH2, v != alpnUnknown
}

// Decide makes the choice if it is not made yet, by connecting to the
// first live backend of bs that accepts a connection (within ConnTO;
// a failed connect marks that backend dead, as any does). known is false
// when none did: the request is answered as when no backend is alive.
func (a *ALPNChoice) Decide(bs []*Backend) (h2, known bool) {
	if h2, known = a.Known(); known {
		return h2, known
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range bs {
		if h2, known = a.Known(); known {
			return h2, known
		}
		if !b.Alive() || !b.Enabled() || b.autoALPN() == nil {
			continue
		}
		if c, err := b.Dial(time.Time{}); err == nil {
			c.Close() // the handshake settled the choice; the connection is not needed
		}
	}
	return a.Known()
}

// ShareALPN links the Protocol auto backends among bs to one choice: the
// one some of them already have (kept across a reload), else a new one.
// It returns the choice, or nil when none of bs is Protocol auto.
func ShareALPN(bs []*Backend) *ALPNChoice {
	var choice *ALPNChoice
	for _, b := range bs {
		if b.autoALPN() == nil {
			continue
		}
		if choice == nil {
			choice = b.autoALPN().p.Load()
		}
	}
	for _, b := range bs {
		if b.autoALPN() == nil {
			continue
		}
		if choice == nil {
			choice = &ALPNChoice{}
		}
		b.autoALPN().p.Store(choice)
	}
	return choice
}

// TLSDialAuto is TLSDial for a Protocol auto backend: the handshake
// offers what the service's choice allows (both protocols until it is
// made) and settles it.
func TLSDialAuto(base DialFunc, cfg *tls.Config, address string, auto *AutoALPN) DialFunc {
	if base == nil {
		base = DefaultDial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := base(ctx, network, addr)
		if err != nil || addr != address {
			return raw, err
		}
		choice := auto.p.Load()
		if choice == nil {
			choice = &ALPNChoice{} // not in a service yet (tests): decides for this connection only
		}
		c := cfg.Clone()
		c.NextProtos = choice.offer()
		tc := tls.Client(raw, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close() // the handshake's error is the one to report
			return nil, err
		}
		if err := choice.settle(tc.ConnectionState().NegotiatedProtocol); err != nil {
			tc.Close() // the protocol's error is the one to report
			return nil, err
		}
		return &tlsConn{Conn: tc, raw: raw}, nil
	}
}

// autoALPN is the Protocol auto state, nil for other backends.
func (b *Backend) autoALPN() *AutoALPN {
	if b.rare == nil {
		return nil
	}
	return b.rare.auto
}
