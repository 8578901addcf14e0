// Package adminapi is lbd's control API: the JSON REST interface served on
// a UNIX socket in two dialects, Pound 4 (pound.md §3) and zproxy 0.9.5
// (zproxy.md §1), plus the OpenMetrics exposition of Pound's Metrics
// backend.
//
// The package knows nothing about the engine. It declares the Controller
// interface it needs (moby's Backend pattern); the engine implements it and
// the tests fake it. Handlers read one immutable State snapshot per request
// and turn it into the dialect's JSON; mutations go through the Controller
// and its errors are classified once (ErrNotFound, ErrInvalid, ErrConflict).
//
// Wiring, for a Pound configuration with `Control "path"`:
//
//	ln, err := adminapi.Listen(path, mode) // mode 0 = 0600
//	srv := adminapi.NewServer(adminapi.NewPoundHandler(engine))
//	srv.Logger, srv.RequestLog = logger, logControlRequest
//	go srv.Serve(ln)
//	defer srv.Close() // also removes the socket file
//
// and NewZproxyHandler for the socket named by lbd's -C flag. A Pound
// `Metrics` backend serves WriteMetrics; a `Control` backend inside a
// service can serve NewPoundHandler directly.
package adminapi

import (
	"errors"
	"net/http"
	"time"
)

// Sentinel errors a Controller wraps (with %w) so the API can answer with
// the right status.
var (
	// ErrNotFound: the listener, service, backend or session does not
	// exist (404).
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request is well-formed but the value is not
	// acceptable, e.g. an unknown log format or disabling the control
	// backend (400).
	ErrInvalid = errors.New("invalid argument")
	// ErrConflict: the change collides with the current state, e.g. a
	// backend with that address already exists (409).
	ErrConflict = errors.New("conflict")
)

// Ref addresses an object by indices into a State snapshot (never the
// Pound view, where the control socket shifts listeners by one).
type Ref struct {
	// Listener indexes State.Listeners; -1 selects State.Services (Pound's
	// global services).
	Listener int
	// Service indexes the listener's services; -1 means the listener
	// itself.
	Service int
	// Backend indexes the service's backends; -1 means the service itself.
	Backend int
}

// SessionSpec is a session to create, move or restore.
type SessionSpec struct {
	Key string
	// Backend indexes the service's backends.
	Backend int
	// LastSeen is the last-use time to record; the zero Time means now.
	LastSeen time.Time
	// Static asks for a session that never expires (zproxy "last-seen": 0).
	Static bool
}

// BackendSpec is a backend added at runtime (zproxy PUT .../backends). The
// handler has applied zproxy's defaults (weight 1, priority 1, no limit).
type BackendSpec struct {
	ID        string // "" means "address-port"
	Address   string
	Port      int
	HTTPS     bool
	Weight    int
	Priority  int
	ConnLimit int
}

// BackendSettings are the values a runtime change of a backend sets (an
// lbd extension: PATCH of a backend in both dialects); nil leaves a value
// as it is.
type BackendSettings struct {
	// Weight is the backend's weight in its service's balancing: Pound's
	// Priority (0-65535, 0 = never picked) in a service balanced by
	// Pound's random or iwrr, zproxy's Weight (1-2147483647) in one with a
	// RoutingPolicy.
	Weight *int
	// Priority is the Priority statement: the weight itself under Pound's
	// balancing (0-65535), zproxy's tier (1-9) under a RoutingPolicy.
	Priority *int
	// ConnLimit caps the backend's connections; 0 removes the cap.
	ConnLimit *int
}

// Controller is what the control API needs from the running engine. All
// methods must be safe for concurrent use. Mutations report failures by
// wrapping ErrNotFound, ErrInvalid or ErrConflict; any other error is an
// internal failure (500).
type Controller interface {
	// State returns the current snapshot. It must not be modified by the
	// caller and must not change after being returned.
	State() *State
	// SetEnabled enables or disables a listener, a service or a backend.
	SetEnabled(ref Ref, enabled bool) error
	// AddBackend appends a backend to the service ref at runtime. Like
	// zproxy, the addition is not written to the configuration file.
	AddBackend(ref Ref, spec BackendSpec) error
	// SetBackend changes a backend's weight, priority or connection
	// limit at runtime; balancers use the new values from their next
	// pick. Like AddBackend, the change lasts until the next reload.
	SetBackend(ref Ref, s BackendSettings) error
	// RemoveBackend removes a backend from its service at runtime: its
	// sessions go, requests in flight finish, its connections close. A
	// backend of the configuration file comes back at the next reload.
	RemoveBackend(ref Ref) error
	// SetLogLevel sets the request log format of a listener (index into
	// State.Listeners) or, with listener -1, the global one. level is a
	// format name or number; "" clears a listener's own level.
	SetLogLevel(listener int, level string) error
	// Reload re-reads the configuration file (zproxy PATCH /config). On
	// error the running configuration stays in place.
	Reload() error
	SessionTable
}

// SessionTable is the part of Controller that edits session tables. Every
// ref names a service (Backend -1) unless stated otherwise.
type SessionTable interface {
	// AddSession inserts the session, or re-points and refreshes it if the
	// key exists.
	AddSession(ref Ref, s SessionSpec) error
	// MoveSession points an existing key at another backend and records its
	// last-seen time; ErrNotFound if the key does not exist.
	MoveSession(ref Ref, s SessionSpec) error
	// DeleteSession removes one key; ErrNotFound if it does not exist.
	DeleteSession(ref Ref, key string) error
	// FlushSessions removes all sessions of the service, or with
	// ref.Backend >= 0 only those pointing at that backend.
	FlushSessions(ref Ref) error
	// SyncSessions replaces the whole table of the service.
	SyncSessions(ref Ref, sessions []SessionSpec) error
}

// statusOf classifies a Controller error into an HTTP status, in one place
// for both dialects.
func statusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	default:
		return http.StatusInternalServerError
	}
}
