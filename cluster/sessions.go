package cluster

import (
	"context"
	"time"

	"lbd/backend"
	"lbd/service"
	"lbd/session"
)

// sharedTable is one shared service's session table as the Node sees it
// after an attach; a reload makes new ones (changes still queued keep
// pointing at the old, whose names are the same).
type sharedTable struct {
	n                 *Node
	listener, service string
	table             *session.Table[*backend.Backend]
	byName            map[string]*backend.Backend
	prefix            string        // Redis key prefix of its sessions
	touchEvery        time.Duration // 0: sessions never expire
}

// tableSet is the shared tables by {listener, service}; never modified
// once published.
type tableSet map[[2]string]*sharedTable

// backendName is the name a pinned backend travels by: the zproxy id,
// the path of a UNIX-socket backend (the engine names them alike).
func backendName(b *backend.Backend) string {
	if id := b.ID(); id != "" {
		return id
	}
	return b.Address()
}

// touch intervals: a few per TTL, within bounds.
const (
	minTouch = 250 * time.Millisecond
	maxTouch = 30 * time.Second
)

func (n *Node) newSharedTable(key [2]string, svc *service.Service) *sharedTable {
	st := &sharedTable{n: n, listener: key[0], service: key[1], table: svc.Sessions,
		byName: map[string]*backend.Backend{}, prefix: n.keys.servicePrefix(key[0], key[1])}
	for _, b := range svc.Backends {
		if _, dup := st.byName[backendName(b)]; !dup {
			st.byName[backendName(b)] = b
		}
	}
	if ttl := svc.Sessions.TTL(); ttl > 0 {
		st.touchEvery = min(max(ttl/4, minTouch), maxTouch)
	}
	return st
}

// sameBackends reports whether two attachments name the same backends.
func sameBackends(a, b *sharedTable) bool {
	if len(a.byName) != len(b.byName) {
		return false
	}
	for k, v := range a.byName {
		if b.byName[k] != v {
			return false
		}
	}
	return true
}

// attach observes the shared tables of the engine's current graph and
// returns those whose sessions must be loaded from Redis (new tables, or
// new backends that sessions kept in Redis may point to).
func (n *Node) attach() []*sharedTable {
	old := *n.tables.Load()
	next := tableSet{}
	var fresh []*sharedTable
	for key, svc := range n.eng.SessionServices() {
		if !n.cfg.Shares(key[1]) {
			continue
		}
		st := n.newSharedTable(key, svc)
		next[key] = st
		if prev := old[key]; prev == nil || prev.table != st.table || !sameBackends(prev, st) {
			fresh = append(fresh, st)
		}
		st.table.Observe(st)
	}
	for key, prev := range old {
		if cur := next[key]; cur == nil || cur.table != prev.table {
			prev.table.Observe(nil)
		}
	}
	n.tables.Store(&next)
	return fresh
}

// sessionChange is one change waiting to be sent. It holds no pointer
// the request path had to allocate: the key is the table entry's own.
type sessionChange struct {
	t      *sharedTable
	op     byte
	key    string
	b      *backend.Backend // nil: a flush of every backend
	ts     uint64
	used   time.Time // zero: static
	queued time.Time
}

// enqueue hands a change to the publisher, or drops it (counted, and
// sent again by the next reconciliation) when the queue is full: the
// request path never waits for the cluster.
func (n *Node) enqueue(c sessionChange) {
	select {
	case n.queue <- c:
	default:
		n.stats.sessionsDropped.Add(1)
		if c.op == opSet {
			n.needResync(c.ts)
		}
	}
}

// needResync lowers resyncFrom to ts.
func (n *Node) needResync(ts uint64) {
	for {
		cur := n.resyncFrom.Load()
		if (cur != 0 && cur <= ts) || n.resyncFrom.CompareAndSwap(cur, ts) {
			return
		}
	}
}

// Stored is the table's report of a new or moved pin (session.Observer).
func (st *sharedTable) Stored(key string, b *backend.Backend, used time.Time, static bool) uint64 {
	ts := st.n.clock.Now()
	if static {
		used = time.Time{}
	}
	st.n.enqueue(sessionChange{t: st, op: opSet, key: key, b: b, ts: ts, used: used, queued: time.Now()})
	return ts
}

// Deleted is the table's report of a deletion by the control API.
func (st *sharedTable) Deleted(key string) {
	now := time.Now()
	ts := st.n.clock.Now()
	st.n.tombs.add(tombKey{st.listener, st.service, key}, ts, now)
	st.n.enqueue(sessionChange{t: st, op: opDelete, key: key, ts: ts, queued: now})
}

// DeletedValue is the table's report of a flush of b's sessions.
func (st *sharedTable) DeletedValue(b *backend.Backend) {
	st.n.enqueue(sessionChange{t: st, op: opFlush, b: b, ts: st.n.clock.Now(), queued: time.Now()})
}

// Flushed is the table's report of a flush of every session.
func (st *sharedTable) Flushed() {
	st.n.enqueue(sessionChange{t: st, op: opFlush, ts: st.n.clock.Now(), queued: time.Now()})
}

// record is c as sent at sent.
func (c *sessionChange) record(sent time.Time) sessionRecord {
	r := sessionRecord{Op: c.op, Listener: c.t.listener, Service: c.t.service, Key: c.key, TS: c.ts,
		Static: c.op == opSet && c.used.IsZero(), Wait: sent.Sub(c.queued)}
	if c.b != nil {
		r.Backend = backendName(c.b)
	}
	if !c.used.IsZero() {
		r.Age = max(sent.Sub(c.used), 0)
	}
	return r
}

// expiry is how long Redis keeps a session last used age ago (0: for
// ever), as the publishing instance's TTL says.
func (st *sharedTable) expiry(age time.Duration, static bool) time.Duration {
	ttl := st.table.TTL()
	if static || ttl <= 0 {
		return 0
	}
	return max(ttl-age, time.Millisecond)
}

// publishSessions sends the queued changes in batches. While Redis is
// down it drops them, remembering the earliest for the reconciliation.
func (n *Node) publishSessions(ctx context.Context) {
	batch := make([]sessionChange, 0, maxBatch)
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-n.queue:
			batch = append(batch[:0], c)
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case c := <-n.queue:
				batch = append(batch, c)
			default:
				break drain
			}
		}
		if !n.connected() {
			n.discard(batch)
			continue
		}
		var err error
		if buf, err = n.sendSessions(ctx, batch, buf[:0]); err != nil {
			n.markDown(err)
			n.discard(batch)
			kick(n.reconcileKick)
		}
	}
}

// discard forgets changes that could not be sent, so that the next
// reconciliation sends their sessions.
func (n *Node) discard(batch []sessionChange) {
	for _, c := range batch {
		if c.op == opSet {
			n.needResync(c.ts)
		}
	}
}

// sendSessions stores a batch in Redis and publishes it in one round
// trip. Flushes are applied to Redis afterwards, key by key.
func (n *Node) sendSessions(ctx context.Context, batch []sessionChange, buf []byte) ([]byte, error) {
	now := time.Now()
	msg := message{Kind: kindSessions, Node: n.name, Sent: now, Sessions: make([]sessionRecord, 0, len(batch))}
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	pipe := n.rdb.Pipeline()
	var flushes []sessionRecord
	for i := range batch {
		c := &batch[i]
		r := c.record(now)
		key := c.t.prefix + r.Key
		switch r.Op {
		case opSet:
			setScript.EvalSha(ctx, pipe, []string{key}, storedSession(&r), c.t.expiry(r.Age, r.Static).Milliseconds())
		case opDelete:
			setScript.EvalSha(ctx, pipe, []string{key}, storedSession(&r), tombstoneTTL.Milliseconds())
		case opTouch:
			pipe.Do(ctx, "PEXPIRE", key, c.t.expiry(r.Age, false).Milliseconds(), "GT")
		case opFlush:
			flushes = append(flushes, r)
		}
		msg.Sessions = append(msg.Sessions, r)
	}
	buf = appendMessage(buf, &msg)
	pipe.Publish(ctx, n.keys.channel, buf)
	if err := execPipe(ctx, n, pipe); err != nil {
		return buf, err
	}
	n.stats.sessionsSent.Add(int64(len(batch)))
	n.touchedRedis()
	for i := range flushes {
		if err := n.flushRedis(ctx, &flushes[i]); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// flushRedis deletes the stored sessions a flush removed: those of the
// service (or of one backend) stored before it.
func (n *Node) flushRedis(ctx context.Context, f *sessionRecord) error {
	prefix := n.keys.servicePrefix(f.Listener, f.Service)
	return n.scanSessions(ctx, prefix, func(key string, v []byte, _ time.Duration) error {
		r, err := decodeStoredSession(v)
		if err != nil || r.TS >= f.TS || (f.Backend != "" && r.Backend != f.Backend) {
			return nil // not one of the flushed (or not ours to judge)
		}
		return delScript.Run(ctx, n.rdb, []string{key}, v).Err()
	})
}

// applySession applies a peer's session change; sent is when the peer
// sent it. It reports whether the change counts for the lag (a change
// applied or found already in effect, not a touch).
func (n *Node) applySession(r *sessionRecord, now time.Time) bool {
	n.clock.Observe(r.TS)
	st := (*n.tables.Load())[[2]string{r.Listener, r.Service}]
	if st == nil {
		return false // not shared here: Redis keeps it
	}
	var b *backend.Backend
	if r.Backend != "" {
		if b = st.byName[r.Backend]; b == nil {
			return false // a backend this instance does not have
		}
	}
	tk := tombKey{r.Listener, r.Service, r.Key}
	switch r.Op {
	case opSet:
		if n.tombs.buries(tk, r.TS, now) {
			return false
		}
		used := time.Time{}
		if !r.Static {
			used = now.Add(-r.Age)
		}
		name := r.Backend
		st.table.Apply(r.Key, b, r.TS, used, r.Static, func(cur *backend.Backend) bool { return name > backendName(cur) })
	case opDelete:
		n.tombs.add(tk, r.TS, now)
		st.table.ApplyDelete(r.Key, r.TS)
	case opTouch:
		st.table.Touch(r.Key, b, now.Add(-r.Age))
		return false
	case opFlush:
		var match func(*backend.Backend) bool
		if b != nil {
			match = func(v *backend.Backend) bool { return v == b }
		}
		st.table.DropOlder(r.TS, match)
	}
	n.stats.sessionsApplied.Add(1)
	return true
}

// touch reports, a few times per TTL, the sessions used here since the
// cluster last heard of them, so that they do not expire on the peers.
func (n *Node) touch(ctx context.Context) {
	t := time.NewTicker(minTouch)
	defer t.Stop()
	next := map[*sharedTable]time.Time{}
	var buf []session.Entry[*backend.Backend]
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, st := range *n.tables.Load() {
				if st.touchEvery == 0 || now.Before(next[st]) || !n.connected() {
					continue
				}
				next[st] = now.Add(st.touchEvery)
				buf = st.table.CollectUsed(buf[:0])
				for _, e := range buf {
					c := sessionChange{t: st, op: opTouch, key: e.Key, b: e.Value, ts: e.Version, used: e.LastUsed, queued: now}
					select {
					case n.queue <- c:
					case <-ctx.Done():
						return
					}
				}
			}
			for st := range next {
				if (*n.tables.Load())[[2]string{st.listener, st.service}] != st {
					delete(next, st)
				}
			}
		}
	}
}

// pushSessions sends the shared sessions changed since from (all of them
// for 1) to Redis, in batches, each also published.
func (n *Node) pushSessions(ctx context.Context, from uint64) (int, error) {
	sent := 0
	var batch []sessionChange
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := n.sendSessions(ctx, batch, nil)
		sent += len(batch)
		batch = batch[:0]
		return err
	}
	for _, st := range *n.tables.Load() {
		var err error
		now := time.Now()
		st.table.Range(func(e session.Entry[*backend.Backend]) bool {
			if e.Version < from || e.Version == 0 {
				return true
			}
			batch = append(batch, sessionChange{t: st, op: opSet, key: e.Key, b: e.Value, ts: e.Version, used: e.LastUsed, queued: now})
			if len(batch) >= maxBatch {
				err = flush()
			}
			return err == nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// loadSessions applies the sessions Redis holds for st.
func (n *Node) loadSessions(ctx context.Context, st *sharedTable) (int, error) {
	applied := 0
	ttl := st.table.TTL()
	err := n.scanSessions(ctx, st.prefix, func(_ string, v []byte, pttl time.Duration) error {
		r, err := decodeStoredSession(v)
		if err != nil {
			n.log.Debugf("cluster: skipping a stored session: %v", err)
			return nil
		}
		if r.Op == opSet && !r.Static && ttl > 0 && pttl > 0 {
			r.Age = max(ttl-pttl, 0) // Redis expires it when its TTL is up
		}
		if n.applySession(&r, time.Now()) {
			applied++
		}
		return nil
	})
	return applied, err
}

// scanSessions calls fn for every stored session under prefix, with its
// remaining time to live (-1: none).
func (n *Node) scanSessions(ctx context.Context, prefix string, fn func(key string, v []byte, pttl time.Duration) error) error {
	var cursor uint64
	for {
		sctx, cancel := context.WithTimeout(ctx, ioTimeout)
		keys, next, err := n.rdb.Scan(sctx, cursor, globEscape(prefix)+"*", 1000).Result()
		if err != nil {
			cancel()
			return err
		}
		if len(keys) > 0 {
			pipe := n.rdb.Pipeline()
			gets := make([]interface{ Bytes() ([]byte, error) }, len(keys))
			ttls := make([]interface {
				Result() (time.Duration, error)
			}, len(keys))
			for i, k := range keys {
				gets[i] = pipe.Get(sctx, k)
				ttls[i] = pipe.PTTL(sctx, k)
			}
			if _, err := pipe.Exec(sctx); err != nil && !isNil(err) {
				cancel()
				return err
			}
			for i, k := range keys {
				v, err := gets[i].Bytes()
				if err != nil {
					continue // expired between SCAN and GET
				}
				pttl, _ := ttls[i].Result() // an error leaves 0: treated as unknown
				if err := fn(k, v, pttl); err != nil {
					cancel()
					return err
				}
			}
		}
		cancel()
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}
