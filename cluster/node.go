// Package cluster makes several lbd instances one: each is a Node that
// shares the session tables of the services named in the Cluster section
// and the runtime state changed through the control API with the others,
// through Redis (standalone or Sentinel).
//
// Redis is never on the request path. A session hit is served from the
// instance's own table; a new pin is stamped by a hybrid logical clock
// and put on a bounded queue (dropped with a count when it is full, and
// sent again by the next reconciliation), and a background publisher
// stores batches of them in Redis and publishes them on one Pub/Sub
// channel, from which every other instance applies them. Control changes
// reach the Node through the engine's Change feed and are merged into a
// last-writer-wins map of runtime state (see merge.go). When Redis is
// down every instance serves from its own state; when it is back, each
// reconciles: it sends what Redis lacks, then loads the shared state.
//
// The package depends on the engine only through the Engine interface
// below and the session table's Observer, so the engine knows nothing of
// it (cmd/lbd wires the two).
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
	"lbd/service"
)

// Engine is what a Node needs of the running engine (engine.Engine).
type Engine interface {
	// ApplyChange applies a peer's control change without reporting it
	// back; adminapi.ErrNotFound when the object is not here.
	ApplyChange(adminapi.Change) error
	// SessionServices returns the services with a session table, by
	// their cluster names {listener, service}.
	SessionServices() map[[2]string]*service.Service
}

// Timings of the background work.
const (
	heartbeatEvery = time.Second     // heartbeat, health check, node list
	startWait      = 2 * time.Second // how long Start waits for the first sync
	queueSize      = 1 << 14         // session changes waiting to be sent
	maxBatch       = 512             // session changes per publication
	retryPause     = 200 * time.Millisecond
)

// Node is this instance's membership of the cluster.
type Node struct {
	cfg   *config.Cluster
	name  string
	log   logrus.FieldLogger
	rdb   redis.UniversalClient
	keys  keys
	clock *Clock
	eng   Engine

	queue   chan sessionChange
	tables  atomic.Pointer[tableSet]
	overlay *overlay
	tombs   *tombstones

	// resyncFrom is the earliest stamp of a session change that was not
	// sent (queue full, Redis down): the next reconciliation sends every
	// session changed since. 0: none.
	resyncFrom atomic.Uint64

	stateKick     chan struct{}
	reattachKick  chan struct{}
	reconcileKick chan struct{}
	firstSync     chan struct{}
	firstOnce     sync.Once
	// subscribed is closed when the channel subscription first holds;
	// reconciles counts the full reconciliations started. A subscription
	// that holds after a reconciliation started may have missed what was
	// published in between: it asks for another (see subscribe).
	subscribed    chan struct{}
	subscribeOnce sync.Once
	reconciles    atomic.Int64

	health health
	stats  counters
	lag    lagHistogram
	peers  peers

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closing atomic.Bool // Close: failures from here on are not news

	// applied, when set (by tests and benchmarks), is called with the
	// lag of every peer's change applied here.
	applied atomic.Pointer[func(time.Duration)]
}

type counters struct {
	sessionsSent, sessionsApplied, sessionsDropped atomic.Int64
	stateSent, stateApplied                        atomic.Int64
}

// New prepares a Node for the Cluster section c; nothing connects before
// Start.
func New(c *config.Cluster, log logrus.FieldLogger) (*Node, error) {
	name := c.Node
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("cluster: no Node name and no host name: %w", err)
		}
		name = h
	}
	prefix := c.KeyPrefix
	if prefix == "" {
		prefix = config.DefaultKeyPrefix
	}
	// go-redis logs reconnection attempts by itself; the Node logs the
	// state of the connection once per change instead.
	redis.SetLogger(quietLogger{})
	n := &Node{
		cfg: c, name: name, log: log, rdb: newClient(c), keys: newKeys(prefix), clock: NewClock(nil),
		queue: make(chan sessionChange, queueSize), overlay: newOverlay(), tombs: newTombstones(),
		stateKick: make(chan struct{}, 1), reattachKick: make(chan struct{}, 1),
		reconcileKick: make(chan struct{}, 1), firstSync: make(chan struct{}), subscribed: make(chan struct{}),
	}
	n.tables.Store(&tableSet{})
	n.peers.m = map[string]*peer{}
	return n, nil
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// Start attaches to the engine's session tables and starts the
// background work; it waits (at most startWait) for the first exchange
// with Redis, so that an instance that can reach Redis serves the
// cluster's state from its first requests on. Call it before the engine
// binds its listeners, and Started once it serves.
func (n *Node) Start(eng Engine) {
	n.eng = eng
	n.attach()
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	for _, f := range []func(context.Context){n.maintain, n.subscribe, n.publishSessions, n.pushState, n.watchReloads, n.touch} {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			f(ctx)
		}()
	}
	select {
	case <-n.firstSync:
	case <-time.After(startWait):
		n.log.Warnf("cluster: no first sync with Redis within %v; serving from the local state meanwhile", startWait)
	}
}

// Started tells the Node that the engine now serves: what could not be
// applied before (listeners, runtime backends, log levels) is applied.
func (n *Node) Started() { kick(n.reattachKick) }

// Close stops the background work and leaves the session tables alone.
func (n *Node) Close() {
	n.closing.Store(true)
	if n.cancel != nil {
		n.cancel()
	}
	n.rdb.Close() // ends a subscriber blocked in Receive
	n.wg.Wait()
	for _, st := range *n.tables.Load() {
		st.table.Observe(nil)
	}
}

// kick signals a channel of capacity one without blocking.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Changed is the engine's report of a control change (under its lock):
// it is stamped, merged into the runtime state and sent in the
// background. A reload makes the Node attach to the new objects.
func (n *Node) Changed(c adminapi.Change) {
	if c.Kind == adminapi.ChangeReloaded {
		kick(n.reattachKick)
		return
	}
	r := stateRecord{Stamp: Stamp{TS: n.clock.Now(), Tie: n.name}, Change: c}
	n.overlay.merge(r, true)
	kick(n.stateKick)
}

// health is the state of the connection to Redis.
type health struct {
	mu        sync.Mutex
	state     int    // 0 unknown (starting), 1 up, 2 down
	failKind  string // when down: failureKind of the last error
	since     time.Time
	lastErr   string
	lastOK    time.Time
	epoch     string // the epoch key's value at the last reconciliation
	connected atomic.Bool
}

const (
	stateUnknown = iota
	stateUp
	stateDown
)

// markDown records a failed exchange; the first after a success (or at
// start) is logged, the others are not.
func (n *Node) markDown(err error) {
	h := &n.health
	h.mu.Lock()
	defer h.mu.Unlock()
	h.connected.Store(false)
	kind := failureKind(err)
	// A server that refuses the handshake or the password often resets
	// the next connections as well: while the failure lasts, that reset
	// is still the refusal, not Redis going away.
	if kind == failUnreachable && h.state == stateDown && h.failKind != failUnreachable {
		kind = h.failKind
	}
	h.lastErr = kind + ": " + err.Error()
	// A failure is news when it starts, and when its cause changes (a
	// Redis restarted with another password, say).
	if h.state == stateDown && kind == h.failKind || n.closing.Load() {
		return
	}
	if h.state != stateDown {
		h.since = time.Now()
	}
	h.state, h.failKind = stateDown, kind
	if kind == failUnreachable {
		n.log.Warnf("cluster: Redis %s unreachable (%v): serving from the local state until it is back", n.redisName(), err)
		return
	}
	n.log.Errorf("cluster: Redis %s: %s (%v): %s; serving from the local state meanwhile", n.redisName(), kind, err, failureHint(kind))
}

// markUp records a successful reconciliation.
func (n *Node) markUp(summary string) {
	h := &n.health
	h.mu.Lock()
	defer h.mu.Unlock()
	h.connected.Store(true)
	h.lastErr, h.lastOK = "", time.Now()
	if h.state == stateUp {
		return
	}
	if h.state == stateDown {
		n.log.Infof("cluster: Redis %s reachable again; %s", n.redisName(), summary)
	} else {
		n.log.Infof("cluster: node %s joined through Redis %s; %s", n.name, n.redisName(), summary)
	}
	h.state, h.since = stateUp, time.Now()
}

func (n *Node) touchedRedis() {
	n.health.mu.Lock()
	n.health.lastOK = time.Now()
	n.health.mu.Unlock()
}

func (n *Node) connected() bool { return n.health.connected.Load() }

func (n *Node) redisName() string {
	if len(n.cfg.Sentinels) > 0 {
		return fmt.Sprintf("master %q of Sentinels %v", n.cfg.Master, n.cfg.Sentinels)
	}
	return n.cfg.Redis
}

// randomEpoch is a fresh value for the epoch key.
func randomEpoch() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return time.Now().String() // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}
