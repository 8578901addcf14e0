// Package backend holds everything lbd knows about one backend server at run
// time: its immutable identity (address, weights, timeouts), its atomic state
// (enabled, alive, connection and status counters, latency averages), a
// lock-free keep-alive connection pool, and the health Prober that brings dead
// backends back.
//
// A Backend is shared by every service and balancer that uses it and survives
// configuration reloads (the engine reuses it by identity), so all state is
// kept in atomics that the data path, the control API and the prober may touch
// concurrently without locks.
package backend

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/h2backend"
	"lbd/internal/metrics"
	"lbd/internal/sockio"
)

// Defaults applied by New for zero Options fields.
const (
	// DefaultConnTO is Pound's default connect timeout (ConnTO 15).
	DefaultConnTO = 15 * time.Second
	// DefaultMaxIdle bounds the idle keep-alive connections kept per backend.
	DefaultMaxIdle = 256
	// DefaultIdleTimeout is how long an idle pooled connection is trusted.
	// It is kept below common backend keep-alive timeouts (nginx 75 s,
	// Go 90 s) so that we, not the backend, usually close first.
	DefaultIdleTimeout = 10 * time.Second
)

// DefaultDial is how a backend connects unless Options.DialContext says
// otherwise: keep-alive probes on, with the kernel's timing (as Pound).
var DefaultDial DialFunc = (&net.Dialer{KeepAliveConfig: sockio.KeepAlive}).DialContext

// DialFunc opens a connection; it has the signature of net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Options describe one backend. They are plain values so that this package
// does not depend on the configuration model; the engine fills them in.
type Options struct {
	// Network is "tcp" or "unix"; "" means "unix" when Address starts with
	// "/" and "tcp" otherwise.
	Network string
	// Address is "host:port" for tcp or the socket path for unix.
	Address string
	// ID is the zproxy backend id ("addr-port"); "" derives it from Address.
	ID string
	// Priority is Pound's weight (random/iwrr) or zproxy's priority tier.
	// It is used as given: Pound's default of 5 is the config's business.
	Priority int
	// Weight is zproxy's weight; values below 1 become 1 (zproxy's default).
	Weight int
	// ConnLimit caps pending+established connections; 0 = unlimited.
	ConnLimit int
	// ConnTO bounds a connect; 0 = DefaultConnTO.
	ConnTO time.Duration
	// TimeOut and WSTimeOut are the response and WebSocket idle timeouts;
	// the engine enforces them, they are stored here for it and the API.
	TimeOut, WSTimeOut time.Duration
	// HAPort is a separate liveness address ("host:port", or just "port" to
	// reuse the backend's host); "" probes the backend address itself.
	HAPort string
	// MaxIdle bounds the keep-alive pool: 0 = DefaultMaxIdle, <0 = no pool.
	MaxIdle int
	// IdleTimeout is how long an idle conn may be reused; 0 = default.
	IdleTimeout time.Duration
	// Disabled starts the backend administratively disabled.
	Disabled bool
	// Emergency marks a Pound Emergency backend, used only when no regular
	// backend is available.
	Emergency bool
	// Group is Pound 4's balancer group of a regular backend: groups are
	// tried in increasing order (0 for configured backends, the SRV
	// priority for those a dynamic backend made).
	Group int
	// NoPassiveDown keeps a failed Dial from marking the backend dead.
	// zproxy only trusts its health monitor; Pound kills on dial failure.
	NoPassiveDown bool
	// Logger receives the dead/resurrected messages; nil = logrus standard.
	Logger Logger
	// DialContext replaces net.Dialer (tests, SO_MARK); nil = net.Dialer.
	DialContext DialFunc
	// ServerName is Pound's backend ServerName: SNI and the Host sent.
	ServerName string
	// HTTPS says DialContext speaks TLS (shown by the control API).
	HTTPS bool
	// HTTP2 speaks HTTP/2 to the backend (TLS with ALPN h2 when HTTPS,
	// else h2c with prior knowledge): see HTTP2.
	HTTP2 bool
	// GRPCCheck probes the backend with the gRPC health check
	// (grpc.health.v1.Health/Check for GRPCService, "" = the server)
	// instead of a TCP connect; it needs HTTP2.
	GRPCCheck   bool
	GRPCService string
	// AutoALPN, for a Protocol auto backend (with HTTP2 and a DialContext
	// of TLSDialAuto's), links it to its service's choice (alpn.go).
	AutoALPN *AutoALPN
}

// Logger is what a backend logs through: only its dead and resurrected
// messages, so a caller can build a logger's fields when a message is
// written rather than keep them for each of thousands of backends. A
// logrus.FieldLogger is a Logger.
type Logger interface {
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
}

// Backend is one backend server: immutable identity plus atomic runtime
// state. It must not be copied after New.
type Backend struct {
	// What balancers read for every candidate, packed together so that a
	// scan over many backends touches one cache line per backend.
	enabled, alive atomic.Bool
	// retired is set when a reload replaced or removed this backend:
	// connections coming back from requests in flight are closed instead
	// of pooled, so nothing stays open to a backend no config names.
	retired atomic.Bool
	probing atomic.Bool // a health probe is in flight
	watchField
	connLimit atomic.Int64 // 0 = unlimited; the control API may change it
	// active and pending are 32 bits each, in one word (no backend has
	// two billion connections; 20,000 backends: 0.6 MB less with the
	// fields below, issue 36).
	active  atomic.Int32 // connections checked out (in use)
	pending atomic.Int32 // connects in progress
	latency atomic.Int64 // EWMA of response time in ns; -1 = none

	// Written once per request, read by the control API.
	requests    atomic.Int64
	status      [5]atomic.Int64 // index = status/100 - 1
	latencySum  atomic.Int64    // ns, over the requests that got a status
	errors      atomic.Int64
	connectTime atomic.Int64 // average connect time in ns; -1 = none
	// duration and connect are the lbd_backend_* histograms: fixed
	// arrays of atomics, allocated on the first observation (most of
	// thousands of backends are never probed), after which recording
	// allocates nothing.
	duration, connect metrics.LazyHistogram
	// probes are the health checks' counts and durations, made at the
	// first probe (most of thousands of backends are never probed).
	probes atomic.Pointer[probeStats]

	pool pool

	hooks atomic.Pointer[hookNode]

	// The immutable flags and the group, together rather than each in
	// a word of its own (20,000 backends: 1.3 MB less, issue 36), and
	// away from the counters every request writes.
	hasHA         bool // a separate HAport is probed
	emergency     bool
	noPassiveDown bool
	https         bool
	grpcCheck     bool
	unix          bool   // the network is "unix", else "tcp"
	group         uint16 // an SRV priority (16 bits in DNS), 0 otherwise
	address, id   string
	// priority and weight change at runtime through the control API
	// (SetPriority, SetWeight); balancers read them when they rebuild.
	priority, weight   atomic.Int64
	connTO             time.Duration
	timeout, wsTimeout time.Duration
	log                Logger
	dial               DialFunc
	rare               *backendRare // nil: none of its settings
}

// backendRare holds what few backends have, one pointer in the others
// (48 bytes less for each of 20,000 plain backends, issue 36).
type backendRare struct {
	probeAddr   string // the HAport's (hasHA)
	serverName  string
	grpcService string
	h2          *h2backend.Pool // HTTP/2 backends only
	auto        *AutoALPN       // Protocol auto only
}

// setRare returns b's backendRare, made on first use (New only).
func (b *Backend) setRare() *backendRare {
	if b.rare == nil {
		b.rare = &backendRare{}
	}
	return b.rare
}

// New builds a Backend from o, applying the documented defaults. It starts
// alive (Pound and zproxy both assume a configured backend works until
// proven otherwise) and enabled unless o.Disabled.
func New(o Options) *Backend {
	b := &Backend{
		unix:          o.Network == "unix",
		address:       o.Address,
		id:            o.ID,
		connTO:        o.ConnTO,
		timeout:       o.TimeOut,
		wsTimeout:     o.WSTimeOut,
		emergency:     o.Emergency,
		group:         uint16(o.Group),
		noPassiveDown: o.NoPassiveDown,
		log:           o.Logger,
		dial:          o.DialContext,
		https:         o.HTTPS,
	}
	if o.AutoALPN != nil {
		b.setRare().auto = o.AutoALPN
	}
	if o.Network == "" {
		b.unix = strings.HasPrefix(b.address, "/")
	}
	if b.id == "" {
		b.id = defaultID(b.Network(), b.address)
	}
	if b.connTO <= 0 {
		b.connTO = DefaultConnTO
	}
	if b.log == nil {
		b.log = logrus.StandardLogger()
	}
	if b.dial == nil {
		b.dial = DefaultDial
	}
	b.priority.Store(int64(o.Priority))
	b.weight.Store(int64(max(o.Weight, 1)))
	b.connLimit.Store(int64(max(o.ConnLimit, 0)))
	if o.HAPort != "" {
		b.hasHA = true
		b.setRare().probeAddr = probeAddress(b.Network(), b.address, o.HAPort)
	}
	if o.ServerName != "" {
		b.setRare().serverName = o.ServerName
	}
	b.enabled.Store(!o.Disabled)
	b.alive.Store(true)
	b.latency.Store(-1)
	b.connectTime.Store(-1)
	b.pool.init(o.MaxIdle, o.IdleTimeout)
	b.initHTTP2(o)
	return b
}

// defaultID derives zproxy's "addr-port" id; unix sockets keep their path.
func defaultID(network, address string) string {
	if network != "tcp" {
		return address
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return address
	}
	return host + "-" + port
}

// probeAddress resolves Pound's HAport: a bare port (or ":port") reuses the
// backend's host, because classic configs write "HAport 8081".
func probeAddress(network, address, ha string) string {
	if ha == "" {
		return address
	}
	if !strings.Contains(ha, ":") || strings.HasPrefix(ha, ":") {
		host := "127.0.0.1"
		if network == "tcp" {
			if h, _, err := net.SplitHostPort(address); err == nil && h != "" {
				host = h
			}
		}
		return net.JoinHostPort(host, strings.TrimPrefix(ha, ":"))
	}
	return ha
}

// Network returns "tcp" or "unix".
func (b *Backend) Network() string {
	if b.unix {
		return "unix"
	}
	return "tcp"
}

// Address returns the dial address (host:port or socket path).
func (b *Backend) Address() string { return b.address }

// String returns the address, the form Pound uses in its log lines.
func (b *Backend) String() string { return b.address }

// ID returns the zproxy-style identifier ("addr-port").
func (b *Backend) ID() string { return b.id }

// Priority returns the Priority (Pound weight or zproxy tier).
func (b *Backend) Priority() int { return int(b.priority.Load()) }

// Weight returns the zproxy weight (at least 1).
func (b *Backend) Weight() int { return int(b.weight.Load()) }

// ConnLimit returns the connection limit; 0 = unlimited.
func (b *Backend) ConnLimit() int { return int(b.connLimit.Load()) }

// ConnTO returns the connect timeout.
func (b *Backend) ConnTO() time.Duration { return b.connTO }

// TimeOut returns the configured response timeout (0 = engine default).
func (b *Backend) TimeOut() time.Duration { return b.timeout }

// WSTimeOut returns the configured WebSocket idle timeout.
func (b *Backend) WSTimeOut() time.Duration { return b.wsTimeout }

// Emergency reports whether this is a Pound Emergency backend.
func (b *Backend) Emergency() bool { return b.emergency }

// Group returns the Pound balancer group (see Options.Group).
func (b *Backend) Group() int { return int(b.group) }

// ProbeAddress returns the network and address health probes connect to.
func (b *Backend) ProbeAddress() (network, address string) { return b.probeNetwork(), b.probeAddress() }

// probeAddress is the address health checks dial: the HAport's, or the
// backend's own.
func (b *Backend) probeAddress() string {
	if b.hasHA {
		return b.rare.probeAddr
	}
	return b.address
}

// probeNetwork is the network health checks dial: TCP to an HAport,
// else the backend's own (hasHA, not a string per backend).
func (b *Backend) probeNetwork() string {
	if b.hasHA {
		return "tcp"
	}
	return b.Network()
}
