package lbctl

import (
	"bytes"
	"encoding/json"
)

// A Pound listing of 10,000 services and 20,000 backends is 5 MB of JSON,
// and encoding/json's reflection took a third of lbctl list's CPU to
// decode it (issue 36). poundDecoder decodes the listing's objects into
// the same structs, member by member, and gives up — the caller then runs
// encoding/json on the whole reply — at anything whose result it does not
// reproduce exactly: a syntax error, a value of the wrong type, a number
// out of range, a key that matches a member only without regard to case,
// which encoding/json accepts. Strings with escapes or non-ASCII bytes are
// handed to encoding/json one at a time. So a reply decodes to the same
// value, or fails with the same error, whichever path it takes
// (TestPoundDecoderMatchesJSON, FuzzPoundDecoder).
type poundDecoder struct {
	b     []byte
	i     int
	depth int // of skipped values
	// The services and backends of a listing are carved out of one
	// array each, sized by counting their kind in the reply: growing
	// a slice of 10,000 services by appending faulted in ~5 times its
	// final size of fresh pages (the most expensive part of decoding).
	svcArena []service
	beArena  []backend
}

// decodePoundFast decodes a reply for a path of level lvl into o; false
// means the reply is beyond it (o is then partly filled: drop it).
func decodePoundFast(o *object, body []byte) bool {
	d := &poundDecoder{b: body}
	if o.doc != nil || o.lst != nil {
		// Only hints: a reply that counts otherwise grows the arrays.
		d.svcArena = make([]service, 0, bytes.Count(body, []byte(`"kind":"service"`)))
		d.beArena = make([]backend, 0, bytes.Count(body, []byte(`"alive":`)))
	}
	var ok bool
	switch {
	case o.doc != nil:
		ok = d.document(o.doc)
	case o.lst != nil:
		ok = d.listener(o.lst)
	case o.svc != nil:
		ok = d.service(o.svc)
	default:
		ok = d.backend(o.be)
	}
	d.space()
	return ok && d.i == len(d.b)
}

// The members of each object, for unknown's check.
var (
	documentKeys = []string{"core", "kind", "listeners", "services"}
	listenerKeys = []string{"address", "enabled", "kind", "name", "protocol", "services", "connections", "tbf", "basic_auth"}
	serviceKeys  = []string{"backends", "enabled", "kind", "name", "session_type", "sessions", "session_count", "tbf", "basic_auth"}
	backendKeys  = []string{"address", "alive", "enabled", "kind", "priority", "protocol", "type", "weight", "code", "url",
		"status", "stats", "id", "connections", "requests", "response_time"}
	statsKeys   = []string{"request_count", "request_time_avg", "request_time_stddev"}
	sessionKeys = []string{"backend", "expire", "key", "last_seen"}
	tbfKeys     = []string{"key", "interval", "burst", "buckets"}
	authKeys    = []string{"file", "generation", "users", "watch"}
)

func (d *poundDecoder) document(doc *document) bool {
	return d.object(documentKeys, func(key string) bool {
		switch key {
		case "core":
			raw, ok := d.skip()
			doc.Core = append(json.RawMessage(nil), raw...)
			return ok
		case "kind":
			return d.str(&doc.Kind)
		case "listeners":
			return slice(d, &doc.Listeners, d.listener)
		case "services":
			return d.services(&doc.Services)
		}
		return d.unknown(key, documentKeys)
	})
}

func (d *poundDecoder) listener(l *listener) bool {
	return d.object(listenerKeys, func(key string) bool {
		switch key {
		case "address":
			return d.str(&l.Address)
		case "enabled":
			return d.boolean(&l.Enabled)
		case "kind":
			return d.str(&l.Kind)
		case "name":
			return d.strPtr(&l.Name)
		case "protocol":
			return d.str(&l.Protocol)
		case "services":
			return d.services(&l.Services)
		case "connections":
			return d.int64Ptr(&l.Connections)
		case "tbf", "basic_auth":
			return d.limits(key, &l.limits)
		}
		return d.unknown(key, listenerKeys)
	})
}

func (d *poundDecoder) services(svcs *[]service) bool {
	return carve(d, &d.svcArena, svcs, d.service)
}

func (d *poundDecoder) service(s *service) bool {
	return d.object(serviceKeys, func(key string) bool {
		switch key {
		case "backends":
			return carve(d, &d.beArena, &s.Backends, d.backend)
		case "enabled":
			return d.boolean(&s.Enabled)
		case "kind":
			return d.str(&s.Kind)
		case "name":
			return d.strPtr(&s.Name)
		case "session_type":
			return d.str(&s.SessionType)
		case "sessions":
			return slice(d, &s.Sessions, d.session)
		case "session_count":
			return d.intPtr(&s.SessionCount)
		case "tbf", "basic_auth":
			return d.limits(key, &s.limits)
		}
		return d.unknown(key, serviceKeys)
	})
}

func (d *poundDecoder) backend(b *backend) bool {
	return d.object(backendKeys, func(key string) bool {
		switch key {
		case "address":
			return d.str(&b.Address)
		case "alive":
			return d.boolean(&b.Alive)
		case "enabled":
			return d.boolean(&b.Enabled)
		case "kind":
			return d.str(&b.Kind)
		case "priority":
			return d.intVal(&b.Priority)
		case "protocol":
			return d.str(&b.Protocol)
		case "type":
			return d.str(&b.Type)
		case "weight":
			return d.intVal(&b.Weight)
		case "code":
			return d.intVal(&b.Code)
		case "url":
			return d.str(&b.URL)
		case "status":
			return d.intVal(&b.Status)
		case "stats":
			if d.null() {
				b.Stats = nil
				return true
			}
			if b.Stats == nil {
				b.Stats = &stats{}
			}
			return d.stats(b.Stats)
		case "id":
			return d.str(&b.ID)
		case "connections":
			return d.int64Ptr(&b.Connections)
		case "requests":
			return d.int64Ptr(&b.Requests)
		case "response_time":
			return d.float64Ptr(&b.ResponseTime)
		}
		return d.unknown(key, backendKeys)
	})
}

func (d *poundDecoder) stats(st *stats) bool {
	return d.object(statsKeys, func(key string) bool {
		switch key {
		case "request_count":
			return d.int64Val(&st.RequestCount)
		case "request_time_avg":
			return d.float64Ptr(&st.RequestTimeAvg)
		case "request_time_stddev":
			return d.float64Ptr(&st.RequestTimeStddev)
		}
		return d.unknown(key, statsKeys)
	})
}

func (d *poundDecoder) session(s *session) bool {
	return d.object(sessionKeys, func(key string) bool {
		switch key {
		case "backend":
			return d.intVal(&s.Backend)
		case "expire":
			return d.str(&s.Expire)
		case "key":
			return d.str(&s.Key)
		case "last_seen":
			return d.int64Ptr(&s.LastSeen)
		}
		return d.unknown(key, sessionKeys)
	})
}

// limits decodes lbd's "tbf" or "basic_auth" member.
func (d *poundDecoder) limits(key string, l *limits) bool {
	if key == "tbf" {
		return slice(d, &l.TBF, func(t *tbfState) bool {
			return d.object(tbfKeys, func(key string) bool {
				switch key {
				case "key":
					return d.str(&t.Key)
				case "interval":
					return d.int64Val(&t.Interval)
				case "burst":
					return d.uint64Val(&t.Burst)
				case "buckets":
					return d.intVal(&t.Buckets)
				}
				return d.unknown(key, tbfKeys)
			})
		})
	}
	return slice(d, &l.BasicAuth, func(f *authState) bool {
		return d.object(authKeys, func(key string) bool {
			switch key {
			case "file":
				return d.str(&f.File)
			case "generation":
				return d.uint64Val(&f.Generation)
			case "users":
				return d.intVal(&f.Users)
			case "watch":
				return d.boolean(&f.Watch)
			}
			return d.unknown(key, authKeys)
		})
	})
}
