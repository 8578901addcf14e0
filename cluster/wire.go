package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"lbd/adminapi"
)

// The wire format of what instances publish on the cluster's Redis
// channel, and of the values they store in Redis. It is binary and
// versioned; every length is checked against what is left, so a
// malformed message costs at most its own size (FuzzDecode).
//
//	message  = "LB" version:1 kind:1 node:str sent:8 count:uvarint record*
//	kind     = 'S' sessions | 'C' control state | 'H' heartbeat (no records)
//	         | 'P' cache purges
//	str      = len:uvarint bytes
//	session  = op:1 listener:str service:str key:str backend:str ts:8
//	           age_ms:uvarint flags:1 wait_us:uvarint
//	state    = ts:8 node:str change wait_us:uvarint
//	purge    = host:str target:str prefix:1
//	change   = kind:1 listener:str service:str backend:str enabled:1
//	           level:str id:str address:str port:uvarint https:1
//	           weight:uvarint priority:uvarint connlimit:uvarint
//
// A change's kind is adminapi.ChangeKind; a backend's Priority, Weight or
// ConnLimit set at runtime travels in the field of that name.
//
// Integers of 8 bytes are big-endian. A value stored in Redis is
// "n:1 order-key:n record" with one session or state record, so that the
// compare-and-set script (casLua) can order two values without
// decoding them.
const (
	wireVersion = 1

	kindSessions  = 'S'
	kindState     = 'C'
	kindHeartbeat = 'H'
	kindPurge     = 'P'

	maxString  = 64 << 10 // longest string (a session key is a cookie value at most)
	maxRecords = 1 << 16  // records in one message
)

// Session operations.
const (
	opSet    = 1 // pin key to backend (new, re-pinned, added or moved)
	opDelete = 2 // the control API deleted key
	opTouch  = 3 // the session was used at age (keeps it alive on peers)
	opFlush  = 4 // the control API flushed the service (backend "") or a backend's sessions
)

// message is one publication.
type message struct {
	Kind     byte
	Node     string
	Sent     time.Time
	Sessions []sessionRecord
	State    []stateRecord
	Purges   []purgeRecord
}

// purgeRecord is a purge of the shared caches (an event: not stored).
type purgeRecord struct {
	Host, Target string
	Prefix       bool
}

// sessionRecord is one change to a shared session table.
type sessionRecord struct {
	Op                byte
	Listener, Service string
	Key, Backend      string
	TS                uint64
	// Age is how long before Sent the session was last used (opSet,
	// opTouch); Static marks a session that never expires.
	Age    time.Duration
	Static bool
	// Wait is how long the change waited before it was sent, so that the
	// receiver measures the lag from the change itself.
	Wait time.Duration
}

// stateRecord is one control change and the stamp that orders it.
type stateRecord struct {
	Stamp  Stamp // Tie is the node that made the change
	Change adminapi.Change
	Wait   time.Duration
}

var errTruncated = errors.New("truncated")

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendUint(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(max(n, 0))) }

// appendMessage encodes m after b.
func appendMessage(b []byte, m *message) []byte {
	b = append(b, 'L', 'B', wireVersion, m.Kind)
	b = appendString(b, m.Node)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Sent.UnixNano()))
	switch m.Kind {
	case kindSessions:
		b = binary.AppendUvarint(b, uint64(len(m.Sessions)))
		for i := range m.Sessions {
			b = appendSession(b, &m.Sessions[i])
		}
	case kindState:
		b = binary.AppendUvarint(b, uint64(len(m.State)))
		for i := range m.State {
			b = appendState(b, &m.State[i])
		}
	case kindPurge:
		b = binary.AppendUvarint(b, uint64(len(m.Purges)))
		for _, p := range m.Purges {
			b = appendBool(appendString(appendString(b, p.Host), p.Target), p.Prefix)
		}
	default:
		b = binary.AppendUvarint(b, 0)
	}
	return b
}

func appendSession(b []byte, r *sessionRecord) []byte {
	b = append(b, r.Op)
	b = appendString(b, r.Listener)
	b = appendString(b, r.Service)
	b = appendString(b, r.Key)
	b = appendString(b, r.Backend)
	b = binary.BigEndian.AppendUint64(b, r.TS)
	b = binary.AppendUvarint(b, uint64(max(r.Age.Milliseconds(), 0)))
	b = appendBool(b, r.Static)
	return binary.AppendUvarint(b, uint64(max(r.Wait.Microseconds(), 0)))
}

func appendState(b []byte, r *stateRecord) []byte {
	b = binary.BigEndian.AppendUint64(b, r.Stamp.TS)
	b = appendString(b, r.Stamp.Tie)
	c := &r.Change
	b = append(b, byte(c.Kind))
	b = appendString(b, c.Listener)
	b = appendString(b, c.Service)
	b = appendString(b, c.Backend)
	b = appendBool(b, c.Enabled)
	b = appendString(b, c.Level)
	sp := &c.Spec
	b = appendString(b, sp.ID)
	b = appendString(b, sp.Address)
	b = appendUint(b, sp.Port)
	b = appendBool(b, sp.HTTPS)
	b = appendUint(b, sp.Weight)
	b = appendUint(b, sp.Priority)
	b = appendUint(b, sp.ConnLimit)
	return binary.AppendUvarint(b, uint64(max(r.Wait.Microseconds(), 0)))
}

// reader decodes; the first error sticks and every later read is zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.fail(errTruncated)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail(errors.New("bad boolean"))
	return false
}

func (r *reader) uint64() uint64 {
	if len(r.b) < 8 {
		r.fail(errTruncated)
		return 0
	}
	n := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return n
}

func (r *reader) uvarint(limit uint64) uint64 {
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail(errTruncated)
		return 0
	}
	if k > 1 && r.b[k-1] == 0 {
		// 0x80 0x00 is also 0: one spelling per number keeps every
		// message's encoding unique.
		r.fail(errors.New("non-minimal varint"))
		return 0
	}
	r.b = r.b[k:]
	if n > limit {
		r.fail(fmt.Errorf("value %d over %d", n, limit))
		return 0
	}
	return n
}

func (r *reader) int(limit int) int { return int(r.uvarint(uint64(limit))) }

func (r *reader) string() string {
	n := r.uvarint(maxString)
	if uint64(len(r.b)) < n {
		r.fail(errTruncated)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// durations on the wire are capped at a day: nothing waits that long.
const maxWireMillis = uint64(24 * time.Hour / time.Millisecond)

// decodeMessage decodes one publication.
func decodeMessage(b []byte) (*message, error) {
	if len(b) < 4 || b[0] != 'L' || b[1] != 'B' {
		return nil, errors.New("not an lbd cluster message")
	}
	if b[2] != wireVersion {
		return nil, fmt.Errorf("wire version %d, want %d", b[2], wireVersion)
	}
	m := &message{Kind: b[3]}
	r := &reader{b: b[4:]}
	m.Node = r.string()
	m.Sent = time.Unix(0, int64(r.uint64()))
	n := r.int(maxRecords)
	switch m.Kind {
	case kindSessions:
		m.Sessions = make([]sessionRecord, 0, min(n, len(r.b)/16+1))
		for i := 0; i < n && r.err == nil; i++ {
			m.Sessions = append(m.Sessions, r.session())
		}
	case kindState:
		m.State = make([]stateRecord, 0, min(n, len(r.b)/16+1))
		for i := 0; i < n && r.err == nil; i++ {
			m.State = append(m.State, r.state())
		}
	case kindPurge:
		for i := 0; i < n && r.err == nil; i++ {
			m.Purges = append(m.Purges, purgeRecord{Host: r.string(), Target: r.string(), Prefix: r.bool()})
		}
	case kindHeartbeat:
		if n != 0 {
			r.fail(errors.New("heartbeat with records"))
		}
	default:
		return nil, fmt.Errorf("unknown message kind %q", m.Kind)
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail(fmt.Errorf("%d bytes after the records", len(r.b)))
	}
	if r.err != nil {
		return nil, fmt.Errorf("cluster message from %q: %w", m.Node, r.err)
	}
	return m, nil
}

func (r *reader) session() sessionRecord {
	var s sessionRecord
	s.Op = r.byte()
	if r.err == nil && (s.Op < opSet || s.Op > opFlush) {
		r.fail(fmt.Errorf("unknown session operation %d", s.Op))
	}
	s.Listener, s.Service = r.string(), r.string()
	s.Key, s.Backend = r.string(), r.string()
	s.TS = r.uint64()
	s.Age = time.Duration(r.uvarint(maxWireMillis)) * time.Millisecond
	s.Static = r.bool()
	s.Wait = time.Duration(r.uvarint(maxWireMillis*1000)) * time.Microsecond
	return s
}

func (r *reader) state() stateRecord {
	var s stateRecord
	s.Stamp.TS = r.uint64()
	s.Stamp.Tie = r.string()
	c := &s.Change
	c.Kind = adminapi.ChangeKind(r.byte())
	switch c.Kind {
	case adminapi.ChangeEnabled, adminapi.ChangeBackendAdded, adminapi.ChangeLogLevel,
		adminapi.ChangeBackendPriority, adminapi.ChangeBackendWeight, adminapi.ChangeBackendConnLimit,
		adminapi.ChangeBackendRemoved:
	default:
		r.fail(fmt.Errorf("unknown change kind %d", c.Kind))
	}
	c.Listener, c.Service, c.Backend = r.string(), r.string(), r.string()
	c.Enabled = r.bool()
	c.Level = r.string()
	sp := &c.Spec
	sp.ID, sp.Address = r.string(), r.string()
	sp.Port = r.int(math.MaxUint16)
	sp.HTTPS = r.bool()
	sp.Weight, sp.Priority, sp.ConnLimit = r.int(math.MaxInt32), r.int(math.MaxInt32), r.int(math.MaxInt32)
	s.Wait = time.Duration(r.uvarint(maxWireMillis*1000)) * time.Microsecond
	return s
}

// storedValue is a record as kept in Redis: its order key, then itself.
func storedValue(order, record []byte) []byte {
	if len(order) > 255 {
		order = order[:255] // never: ties are names of at most a few hundred bytes
	}
	return append(append([]byte{byte(len(order))}, order...), record...)
}

// splitStored returns the record part of a stored value.
func splitStored(v []byte) ([]byte, error) {
	if len(v) < 1 || len(v) < 1+int(v[0]) {
		return nil, errTruncated
	}
	return v[1+int(v[0]):], nil
}

// storedSession is r as a Redis value.
func storedSession(r *sessionRecord) []byte {
	return storedValue(Stamp{r.TS, r.Backend}.orderKey(), appendSession(nil, r))
}

// decodeStoredSession reads a value of storedSession.
func decodeStoredSession(v []byte) (sessionRecord, error) {
	rec, err := splitStored(v)
	if err != nil {
		return sessionRecord{}, err
	}
	r := &reader{b: rec}
	s := r.session()
	if r.err == nil && len(r.b) > 0 {
		r.fail(errors.New("trailing bytes"))
	}
	return s, r.err
}

// storedState is r as a Redis value.
func storedState(r *stateRecord) []byte {
	return storedValue(r.Stamp.orderKey(), appendState(nil, r))
}

// decodeStoredState reads a value of storedState.
func decodeStoredState(v []byte) (stateRecord, error) {
	rec, err := splitStored(v)
	if err != nil {
		return stateRecord{}, err
	}
	r := &reader{b: rec}
	s := r.state()
	if r.err == nil && len(r.b) > 0 {
		r.fail(errors.New("trailing bytes"))
	}
	return s, r.err
}
