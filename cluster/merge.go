package cluster

import (
	"slices"
	"sync"
	"time"

	"lbd/adminapi"
)

// The cluster's runtime state is a last-writer-wins map: each control
// change sets one field (the enabled flag of one object, one runtime
// backend, one log level), and the change with the later Stamp is the
// field's value on every instance, in whatever order the changes arrive.

// fieldOf is the field a change sets. Listener, service and backend
// names are length-prefixed, so no name can forge another's field.
func fieldOf(c *adminapi.Change) string {
	b := []byte{byte(c.Kind)}
	b = appendString(b, c.Listener)
	b = appendString(b, c.Service)
	if c.Kind != adminapi.ChangeLogLevel {
		b = appendString(b, c.Backend)
	}
	return string(b)
}

// stateEntry is a field's current value.
type stateEntry struct {
	rec stateRecord
	// dirty: made here (or kept from a peer) and not yet in Redis.
	dirty bool
	// kept: the last application found no such object here.
	kept bool
}

// overlay is the runtime state as this instance knows it.
type overlay struct {
	mu sync.Mutex
	m  map[string]*stateEntry
}

func newOverlay() *overlay { return &overlay{m: map[string]*stateEntry{}} }

// merge records r if it wins over the field's value and reports whether
// it did; dirty marks a record Redis has yet to get.
func (o *overlay) merge(r stateRecord, dirty bool) bool {
	f := fieldOf(&r.Change)
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur := o.m[f]; cur != nil && !r.Stamp.After(cur.rec.Stamp) {
		return false
	}
	o.m[f] = &stateEntry{rec: r, dirty: dirty}
	return true
}

// sorted returns the records in stamp order (the order to apply them in:
// a backend is added before it is disabled).
func (o *overlay) sorted() []stateRecord {
	o.mu.Lock()
	out := make([]stateRecord, 0, len(o.m))
	for _, e := range o.m {
		out = append(out, e.rec)
	}
	o.mu.Unlock()
	slices.SortFunc(out, func(a, b stateRecord) int {
		switch {
		case a.Stamp.After(b.Stamp):
			return 1
		case b.Stamp.After(a.Stamp):
			return -1
		}
		return 0
	})
	return out
}

// dirty returns the records Redis lacks.
func (o *overlay) dirtyRecords() []stateRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []stateRecord
	for _, e := range o.m {
		if e.dirty {
			out = append(out, e.rec)
		}
	}
	return out
}

// markAllDirty marks every record for sending (Redis lost them).
func (o *overlay) markAllDirty() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.m {
		e.dirty = true
	}
}

// markSent clears dirty on r's field unless a later record replaced it.
func (o *overlay) markSent(r stateRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.m[fieldOf(&r.Change)]; e != nil && e.rec.Stamp == r.Stamp {
		e.dirty = false
	}
}

// setKept records whether r's object was missing when last applied.
func (o *overlay) setKept(r stateRecord, kept bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.m[fieldOf(&r.Change)]; e != nil && e.rec.Stamp == r.Stamp {
		e.kept = kept
	}
}

// counts returns how many records are dirty and how many kept.
func (o *overlay) counts() (dirty, kept int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.m {
		if e.dirty {
			dirty++
		}
		if e.kept {
			kept++
		}
	}
	return dirty, kept
}

// tombstones remember recent session deletions, so that a pin made
// before a delete but arriving after it does not bring the session back.
// They are few (deletes come from the control API) and bounded.
type tombstones struct {
	mu  sync.Mutex
	m   map[tombKey]tomb
	ttl time.Duration
	max int
}

type tombKey struct{ listener, service, key string }

type tomb struct {
	ts      uint64
	expires time.Time
}

// tombstoneTTL covers the longest a pin can be in flight (a partition
// longer than that is settled by reconciliation, not by tombstones).
const (
	tombstoneTTL = time.Minute
	maxTombs     = 1 << 16
)

func newTombstones() *tombstones {
	return &tombstones{m: map[tombKey]tomb{}, ttl: tombstoneTTL, max: maxTombs}
}

// add records a deletion at ts.
func (t *tombstones) add(k tombKey, ts uint64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= t.max {
		for k, v := range t.m {
			if now.After(v.expires) || len(t.m) >= t.max {
				delete(t.m, k)
			}
			if len(t.m) < t.max*3/4 {
				break
			}
		}
	}
	if cur, ok := t.m[k]; !ok || cur.ts < ts {
		t.m[k] = tomb{ts: ts, expires: now.Add(t.ttl)}
	}
}

// buries reports whether a pin at ts is older than a deletion remembered.
func (t *tombstones) buries(k tombKey, ts uint64, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur, ok := t.m[k]
	if !ok {
		return false
	}
	if now.After(cur.expires) {
		delete(t.m, k)
		return false
	}
	return ts <= cur.ts
}
