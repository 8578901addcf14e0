// Package handoff is the state a running lbd hands to the binary that
// replaces it at a zero-downtime upgrade (lbctl upgrade, SIGUSR2): which
// inherited descriptor is which socket, and everything an operator or the
// traffic changed since the configuration was loaded (enabled flags,
// health, sessions, backends added, removed or re-weighted through the
// API, log levels).
//
// The format is versioned JSON. A new binary reads every version up to
// its own and refuses a newer one, so a downgrade to a binary that does
// not know the format fails cleanly and the old process keeps serving.
// A document is written in the oldest version that can hold it: version
// 2 added backends removed and backend settings changed at runtime, so
// a state without them is still version 1 and a downgrade to a binary
// of version 1 works.
// Objects are named by the engine's identities (the keys reloads already
// use to carry state over), never by position alone, so a configuration
// file edited between start and upgrade loses only what it removed.
package handoff

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// Version is the newest format this binary writes and reads.
const Version = 2

// MaxSize bounds a state document: session tables are capped by the
// configuration, and a peer that sends more is not an lbd.
const MaxSize = 256 << 20

// Socket kinds.
const (
	KindListener = "listener" // a listening socket of a ListenHTTP(S)
	KindControl  = "control"  // a control API socket
)

// State is one handoff document.
type State struct {
	Version int `json:"version"`
	// PID is the process handing over.
	PID int `json:"pid"`
	// Sockets describe the descriptors passed with the document.
	Sockets   []Socket   `json:"sockets"`
	Listeners []Listener `json:"listeners,omitempty"`
	Services  []Service  `json:"services,omitempty"`
	// Added are the backends added through the control API since the
	// configuration file was last read, in the order they were added.
	Added []AddedBackend `json:"added_backends,omitempty"`
	// LogLevels are the request log formats set through the control API
	// since the file was last read, in the order they were set.
	LogLevels []LogLevel `json:"log_levels,omitempty"`
	// Removed are the backends of the configuration file removed through
	// the control API since it was last read, by the engine's backend
	// identity, in the order they were removed (version 2). A new process
	// removes them from the file's configuration before it adds Added.
	Removed []string `json:"removed_backends,omitempty"`
	// Settings are the Priority, Weight and ConnLimit values set through
	// the control API since the file was last read, one entry per backend
	// with the values it has now (version 2), applied after Added.
	Settings []BackendSettings `json:"backend_settings,omitempty"`
	// DisabledMatrices are the dynamic backends an operator disabled.
	DisabledMatrices []string `json:"disabled_matrices,omitempty"`
	// Upgrades is the number of binary upgrades that led to the process
	// handing over (0 when it started afresh): the new process counts
	// one more, so lbd_upgrades_total survives the hand-over that a
	// process-local counter would restart at every step. Absent from an
	// older lbd's document, read as 0.
	Upgrades uint64 `json:"upgrades,omitempty"`
}

// Socket is one passed descriptor.
type Socket struct {
	// Index is the descriptor's position among those passed (they
	// travel beside the document, SCM_RIGHTS, in this order).
	Index int    `json:"index"`
	Kind  string `json:"kind"`
	// Key is the listener's bind identity, or the control socket's
	// absolute path.
	Key string `json:"key"`
	// Name is the listener's name, if it has one.
	Name string `json:"name,omitempty"`
}

// Listener is the runtime state of one listener, by bind identity.
type Listener struct {
	Key     string `json:"key"`
	Enabled bool   `json:"enabled"`
}

// Service is the runtime state of one service, by the engine's service
// identity ("l0/1:name", "g/0:name").
type Service struct {
	Key      string    `json:"key"`
	Enabled  bool      `json:"enabled"`
	Backends []Backend `json:"backends,omitempty"`
	Sessions []Session `json:"sessions,omitempty"`
}

// Backend is the runtime state of one backend, by the engine's backend
// identity.
type Backend struct {
	Key     string `json:"key"`
	Enabled bool   `json:"enabled"`
	Alive   bool   `json:"alive"`
}

// Session is one session table entry. Keys that are not UTF-8 (a cookie
// may carry any byte) travel in base64 so that JSON does not mangle them.
type Session struct {
	Key     string `json:"-"`
	Backend string `json:"backend"`
	// LastSeen is the entry's last use; the zero time marks a session
	// that never expires.
	LastSeen time.Time `json:"-"`
}

type sessionJSON struct {
	Key      string     `json:"key,omitempty"`
	KeyB64   string     `json:"key_base64,omitempty"`
	Backend  string     `json:"backend"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
}

// MarshalJSON writes the key as text when it is UTF-8, else in base64,
// and omits last_seen for a session that never expires.
func (s Session) MarshalJSON() ([]byte, error) {
	j := sessionJSON{Backend: s.Backend}
	if utf8.ValidString(s.Key) {
		j.Key = s.Key
	} else {
		j.KeyB64 = base64.StdEncoding.EncodeToString([]byte(s.Key))
	}
	if !s.LastSeen.IsZero() {
		t := s.LastSeen.UTC()
		j.LastSeen = &t
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Session) UnmarshalJSON(b []byte) error {
	var j sessionJSON
	if err := strictUnmarshal(b, &j); err != nil {
		return err
	}
	switch {
	case j.Key != "" && j.KeyB64 != "":
		return errors.New("session has both key and key_base64")
	case j.KeyB64 != "":
		k, err := base64.StdEncoding.DecodeString(j.KeyB64)
		if err != nil {
			return fmt.Errorf("session key_base64: %w", err)
		}
		s.Key = string(k)
	default:
		s.Key = j.Key
	}
	if s.Key == "" {
		return errors.New("session without a key")
	}
	s.Backend = j.Backend
	s.LastSeen = time.Time{}
	if j.LastSeen != nil {
		s.LastSeen = *j.LastSeen
	}
	return nil
}

// AddedBackend is a backend added at runtime (zproxy PUT .../backends)
// to the service with the given identity.
type AddedBackend struct {
	Service   string `json:"service"`
	Address   string `json:"address"`
	Port      int    `json:"port"`
	HTTPS     bool   `json:"https,omitempty"`
	Weight    int    `json:"weight"`
	Priority  int    `json:"priority"`
	ConnLimit int    `json:"conn_limit,omitempty"`
}

// BackendSettings are the values the control API set on one backend,
// by the engine's backend identity; a nil value was not changed.
type BackendSettings struct {
	Backend   string `json:"backend"`
	Priority  *int   `json:"priority,omitempty"`
	Weight    *int   `json:"weight,omitempty"`
	ConnLimit *int   `json:"conn_limit,omitempty"`
}

// LogLevel is a request log format set at runtime: for the listener with
// the given bind identity, or the global one when Listener is "".
type LogLevel struct {
	Listener string `json:"listener,omitempty"`
	Level    string `json:"level"`
}

// Encode writes s as one JSON document followed by a newline, in the
// oldest version that holds it.
func Encode(w io.Writer, s *State) error {
	s.Version = 1
	if len(s.Removed) > 0 || len(s.Settings) > 0 {
		s.Version = 2
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Decode reads one document written by Encode (of this version or an
// older one) and checks it: unknown fields, a newer version, a negative
// or repeated descriptor index, or a socket without a key are errors.
func Decode(r io.Reader) (*State, error) {
	dec := json.NewDecoder(io.LimitReader(r, MaxSize))
	dec.DisallowUnknownFields()
	var s State
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	return &s, nil
}

func (s *State) check() error {
	switch {
	case s.Version < 1:
		return fmt.Errorf("version %d is not a handoff version", s.Version)
	case s.Version > Version:
		return fmt.Errorf("version %d is newer than this binary's %d", s.Version, Version)
	}
	seen := map[int]bool{}
	for _, so := range s.Sockets {
		switch {
		case so.Index < 0:
			return fmt.Errorf("socket %q: negative descriptor index %d", so.Key, so.Index)
		case seen[so.Index]:
			return fmt.Errorf("descriptor %d is listed twice", so.Index)
		case so.Key == "":
			return fmt.Errorf("descriptor %d has no key", so.Index)
		case so.Kind != KindListener && so.Kind != KindControl:
			return fmt.Errorf("descriptor %d: unknown kind %q", so.Index, so.Kind)
		}
		seen[so.Index] = true
	}
	return s.checkBackends()
}

// checkBackends checks the version 2 parts.
func (s *State) checkBackends() error {
	if s.Version < 2 && (len(s.Removed) > 0 || len(s.Settings) > 0) {
		return fmt.Errorf("version %d cannot hold removed backends or backend settings", s.Version)
	}
	for _, k := range s.Removed {
		if k == "" {
			return errors.New("a removed backend has no key")
		}
	}
	for _, bs := range s.Settings {
		switch {
		case bs.Backend == "":
			return errors.New("backend settings without a backend")
		case bs.Priority == nil && bs.Weight == nil && bs.ConnLimit == nil:
			return fmt.Errorf("backend settings of %s set nothing", bs.Backend)
		}
		for _, v := range []*int{bs.Priority, bs.Weight, bs.ConnLimit} {
			if v != nil && *v < 0 {
				return fmt.Errorf("backend settings of %s: negative value %d", bs.Backend, *v)
			}
		}
	}
	return nil
}

// strictUnmarshal decodes b refusing unknown fields, as Decode does for
// the whole document.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
