package lbctl

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
)

// The objects lbctl prints, in Pound's shape (pound.md §3.3): Pound replies
// decode into them directly and zproxy replies are converted, so the table
// and the built-in templates serve both dialects. Members only zproxy (or
// lbd's metrics) supply are optional extras.

// document is Pound's full listing (GET /).
type document struct {
	Core      json.RawMessage `json:"core,omitempty"`
	Kind      string          `json:"kind"`
	Listeners []listener      `json:"listeners"`
	Services  []service       `json:"services"`
}

// listener is a listener object.
type listener struct {
	Address  string    `json:"address"`
	Enabled  bool      `json:"enabled"`
	Kind     string    `json:"kind"`
	Name     *string   `json:"name"`
	Protocol string    `json:"protocol"`
	Services []service `json:"services"`
	// Connections is zproxy's count of open client connections.
	Connections *int64 `json:"connections,omitempty"`
	limits
}

// limits are lbd's members of Pound's listener and service objects: the
// TBF filters and BasicAuth files the object's conditions and rules use.
type limits struct {
	TBF       []tbfState  `json:"tbf,omitempty"`
	BasicAuth []authState `json:"basic_auth,omitempty"`
}

// tbfState is a TBF condition: key, nanoseconds per token, bucket size,
// buckets in use.
type tbfState struct {
	Key      string `json:"key"`
	Interval int64  `json:"interval"`
	Burst    uint64 `json:"burst"`
	Buckets  int    `json:"buckets"`
}

// authState is a BasicAuth password file and its content's generation.
type authState struct {
	File       string `json:"file"`
	Generation uint64 `json:"generation"`
	Users      int    `json:"users"`
	Watch      bool   `json:"watch"`
}

// service is a service object; Sessions is null without a session type.
type service struct {
	Backends    []backend `json:"backends"`
	Enabled     bool      `json:"enabled"`
	Kind        string    `json:"kind"`
	Name        *string   `json:"name"`
	SessionType string    `json:"session_type"`
	Sessions    []session `json:"sessions"`
	// SessionCount replaces Sessions in a listing asked for with
	// ?sessions=count (lbd's extension); nil otherwise.
	SessionCount *int `json:"session_count"`
	limits
}

// backend is a backend object of any type (backend, redirect, error,
// control, ...).
type backend struct {
	Address  string `json:"address,omitempty"`
	Alive    bool   `json:"alive"`
	Enabled  bool   `json:"enabled"`
	Kind     string `json:"kind"`
	Priority int    `json:"priority"`
	Protocol string `json:"protocol,omitempty"`
	Type     string `json:"type"`
	// Weight is Pound's balancer group (65535 for Emergency) or zproxy's
	// Weight.
	Weight int    `json:"weight"`
	Code   int    `json:"code,omitempty"`
	URL    string `json:"url,omitempty"`
	Status int    `json:"status,omitempty"`
	Stats  *stats `json:"stats,omitempty"`
	// zproxy extras: its backend id and live counters.
	ID           string   `json:"id,omitempty"`
	Connections  *int64   `json:"connections,omitempty"`
	Requests     *int64   `json:"requests,omitempty"`
	ResponseTime *float64 `json:"response_time,omitempty"` // seconds
}

// stats is Pound's BackendStats object (times in nanoseconds).
type stats struct {
	RequestCount      int64    `json:"request_count"`
	RequestTimeAvg    *float64 `json:"request_time_avg,omitempty"`
	RequestTimeStddev *float64 `json:"request_time_stddev,omitempty"`
}

// session is one session table entry. Backend is the index in the
// service's backends; Pound gives Expire, zproxy LastSeen (Unix time, 0
// for a session that never expires).
type session struct {
	Backend  int    `json:"backend"`
	Expire   string `json:"expire"`
	Key      string `json:"key"`
	LastSeen *int64 `json:"last_seen,omitempty"`
}

// object is one fetched listing: exactly one of the pointers is set,
// according to how deep the path went.
type object struct {
	path objPath
	doc  *document
	lst  *listener
	svc  *service
	be   *backend
}

// decodePound decodes a Pound listing reply for a path of the given
// depth: with poundDecoder, or, for a reply beyond it, encoding/json.
func decodePound(p objPath, body []byte) (*object, error) {
	if o := newPoundObject(p); decodePoundFast(o, body) {
		return o, nil
	}
	return decodePoundJSON(p, body)
}

// newPoundObject is an empty object of p's depth.
func newPoundObject(p objPath) *object {
	o := &object{path: p}
	switch p.level() {
	case levelAll:
		o.doc = &document{}
	case levelListener:
		o.lst = &listener{}
	case levelService:
		o.svc = &service{}
	default:
		o.be = &backend{}
	}
	return o
}

// decodePoundJSON is decodePound with encoding/json.
func decodePoundJSON(p objPath, body []byte) (*object, error) {
	o := newPoundObject(p)
	v := o.value()
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("unexpected reply: %w", err)
	}
	return o, nil
}

// The zproxy objects as lbd serves them (zproxy.md §1.3).
type (
	zListener struct {
		Address     string     `json:"address"`
		Connections int64      `json:"connections"`
		HTTPS       bool       `json:"https"`
		ID          int        `json:"id"`
		Name        string     `json:"name"`
		Port        int        `json:"port"`
		Services    []zService `json:"services"`
	}
	zService struct {
		Backends []zBackend `json:"backends"`
		Name     string     `json:"name"`
		Sessions []zSession `json:"sessions"`
	}
	zBackend struct {
		Hits2xx      int64   `json:"2xx-code-hits"`
		Hits3xx      int64   `json:"3xx-code-hits"`
		Hits4xx      int64   `json:"4xx-code-hits"`
		Hits5xx      int64   `json:"5xx-code-hits"`
		Address      string  `json:"address"`
		Connections  int64   `json:"connections"`
		HTTPS        bool    `json:"https"`
		ID           string  `json:"id"`
		Port         int     `json:"port"`
		Priority     int     `json:"priority"`
		ResponseTime float64 `json:"response-time"`
		Status       string  `json:"status"`
		Type         int     `json:"type"`
		Weight       int     `json:"weight"`
	}
	zSession struct {
		ID        string `json:"id"`
		BackendID string `json:"backend-id"`
		LastSeen  int64  `json:"last-seen"`
	}
)

// decodeZproxy decodes a zproxy reply for a path and converts it.
func decodeZproxy(p objPath, body []byte) (*object, error) {
	o := &object{path: p}
	var err error
	switch p.level() {
	case levelAll:
		var ls []zListener
		if err = json.Unmarshal(body, &ls); err == nil {
			o.doc = &document{Kind: "pound", Listeners: make([]listener, len(ls)), Services: []service{}}
			for i := range ls {
				o.doc.Listeners[i] = ls[i].convert()
			}
		}
	case levelListener:
		var l zListener
		if err = json.Unmarshal(body, &l); err == nil {
			c := l.convert()
			o.lst = &c
		}
	case levelService:
		var s zService
		if err = json.Unmarshal(body, &s); err == nil {
			c := s.convert()
			o.svc = &c
		}
	default:
		var b zBackend
		if err = json.Unmarshal(body, &b); err == nil {
			c := b.convert()
			o.be = &c
		}
	}
	if err != nil {
		return nil, fmt.Errorf("unexpected reply: %w", err)
	}
	return o, nil
}

func (l *zListener) convert() listener {
	out := listener{
		Address: net.JoinHostPort(l.Address, strconv.Itoa(l.Port)), Enabled: true, Kind: "listener",
		Name: strPtr(l.Name), Protocol: protocol(l.HTTPS), Services: make([]service, len(l.Services)),
	}
	conns := l.Connections
	out.Connections = &conns
	for i := range l.Services {
		out.Services[i] = l.Services[i].convert()
	}
	return out
}

// convert maps a zproxy service. zproxy does not say which session type a
// service uses, so it is shown as "-".
func (s *zService) convert() service {
	out := service{Enabled: true, Kind: "service", Name: strPtr(s.Name), SessionType: "-",
		Backends: make([]backend, len(s.Backends)), Sessions: make([]session, len(s.Sessions))}
	index := map[string]int{}
	for i := range s.Backends {
		out.Backends[i] = s.Backends[i].convert()
		index[s.Backends[i].ID] = i
	}
	for i, z := range s.Sessions {
		bi, ok := index[z.BackendID]
		if !ok {
			bi = -1
		}
		last := z.LastSeen
		out.Sessions[i] = session{Key: z.ID, Backend: bi, LastSeen: &last}
	}
	return out
}

// convert maps a zproxy backend: status active/down/disabled becomes
// Pound's enabled and alive; a non-zero type is the redirect code.
func (b *zBackend) convert() backend {
	out := backend{
		Address: net.JoinHostPort(b.Address, strconv.Itoa(b.Port)), Kind: "backend", Type: "backend",
		Alive: b.Status == "active", Enabled: b.Status != "disabled", Priority: b.Priority,
		Weight: b.Weight, Protocol: protocol(b.HTTPS), ID: b.ID,
	}
	if b.Type != 0 {
		out.Type, out.Code = "redirect", b.Type
	}
	conns, reqs := b.Connections, b.Hits2xx+b.Hits3xx+b.Hits4xx+b.Hits5xx
	out.Connections, out.Requests = &conns, &reqs
	if b.ResponseTime >= 0 {
		rt := b.ResponseTime
		out.ResponseTime = &rt
	}
	return out
}

func protocol(https bool) string {
	if https {
		return "https"
	}
	return "http"
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// value is the one part of o that is set: what its JSON reply decodes
// into and encodes from.
func (o *object) value() any {
	switch {
	case o.doc != nil:
		return o.doc
	case o.lst != nil:
		return o.lst
	case o.svc != nil:
		return o.svc
	}
	return o.be
}

// templateData is the object as the generic JSON value templates see:
// the reply itself for Pound, the converted object for zproxy.
func (o *object) templateData() (any, error) {
	v := o.value()
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeGeneric(js)
}
