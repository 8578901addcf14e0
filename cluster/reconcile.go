package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// maintain keeps the node in the cluster: a heartbeat every second
// (which is also the health check and reads the node list), and a
// reconciliation at start, whenever Redis comes back or lost its data,
// and when changes could not be sent.
func (n *Node) maintain(ctx context.Context) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	// Subscribed first, the first load misses nothing published after it.
	select {
	case <-n.subscribed:
	case <-time.After(startWait / 2):
	case <-ctx.Done():
		return
	}
	reconcile := true
	for {
		if reconcile || n.resyncFrom.Load() != 0 {
			summary, err := n.reconcile(ctx, reconcile)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				n.markDown(err)
			} else {
				reconcile = false
				n.markUp(summary)
			}
			n.firstOnce.Do(func() { close(n.firstSync) })
		}
		select {
		case <-ctx.Done():
			return
		case <-n.reconcileKick:
			reconcile = true
			continue
		case <-t.C:
		}
		epoch, err := n.heartbeat(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			n.markDown(err)
			reconcile = true
		case epoch != n.epoch() || !n.connected():
			reconcile = true
		}
	}
}

// epoch is the value of the epoch key at the last reconciliation.
func (n *Node) epoch() string {
	n.health.mu.Lock()
	defer n.health.mu.Unlock()
	return n.health.epoch
}

// heartbeat records this node in the node list, announces it on the
// channel, reads the list and returns the epoch key.
func (n *Node) heartbeat(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	now := time.Now()
	pipe := n.rdb.Pipeline()
	pipe.HSet(ctx, n.keys.nodes, n.name, now.UnixMilli())
	pipe.Publish(ctx, n.keys.channel, appendMessage(nil, &message{Kind: kindHeartbeat, Node: n.name, Sent: now}))
	list := pipe.HGetAll(ctx, n.keys.nodes)
	epoch := pipe.Get(ctx, n.keys.epoch)
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return "", err
	}
	n.touchedRedis()
	n.listed(list.Val())
	return epoch.Val(), nil // "" when the key is gone
}

// listed records the node list: members this one has not heard from yet
// (they may be down) are shown with their last heartbeat.
func (n *Node) listed(list map[string]string) {
	for name, ms := range list {
		if v, err := strconv.ParseInt(ms, 10, 64); err == nil && name != n.name {
			n.peers.get(name).listed.Store(v)
		}
	}
}

// reconcile brings this node and Redis to the same state: it sends the
// control changes Redis lacks and the sessions changed since the last
// that could not be sent (every session when Redis lost its data), then
// loads the shared state and sessions. full asks for the loading part
// too (at start and after an outage); without it only what is pending is
// sent.
func (n *Node) reconcile(ctx context.Context, full bool) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, ioTimeout)
	err := loadScripts(sctx, n.rdb)
	var epoch string
	if err == nil {
		if err = n.rdb.SetNX(sctx, n.keys.epoch, randomEpoch(), 0).Err(); err == nil {
			epoch, err = n.rdb.Get(sctx, n.keys.epoch).Result()
		}
	}
	cancel()
	if err != nil {
		return "", err
	}
	prev := n.epoch()
	lost := prev != "" && epoch != prev
	if lost {
		// Redis restarted empty or was flushed: everything this node
		// knows goes back, runtime state and sessions.
		n.overlay.markAllDirty()
		n.needResync(1)
	}
	pending := n.overlay.dirtyRecords()
	if err := n.sendState(ctx, pending); err != nil {
		return "", fmt.Errorf("sending %d control changes: %w", len(pending), err)
	}
	pushed := 0
	if from := n.resyncFrom.Swap(0); from != 0 {
		if pushed, err = n.pushSessions(ctx, from); err != nil {
			n.needResync(from)
			return "", fmt.Errorf("sending sessions: %w", err)
		}
	}
	n.health.mu.Lock()
	n.health.epoch = epoch
	n.health.mu.Unlock()
	summary := fmt.Sprintf("sent %d control changes and %d sessions", len(pending), pushed)
	if !full {
		return summary, nil
	}
	n.reconciles.Add(1)
	state, err := n.loadState(ctx)
	if err != nil {
		return "", fmt.Errorf("loading the runtime state: %w", err)
	}
	lctx, cancel := context.WithTimeout(ctx, ioTimeout)
	n.rdb.HSet(lctx, n.keys.nodes, n.name, time.Now().UnixMilli()) // a failure shows in the read that follows
	list, err := n.rdb.HGetAll(lctx, n.keys.nodes).Result()
	cancel()
	if err != nil {
		return "", fmt.Errorf("loading the node list: %w", err)
	}
	n.listed(list)
	loaded := 0
	for _, st := range *n.tables.Load() {
		k, err := n.loadSessions(ctx, st)
		if err != nil {
			return "", fmt.Errorf("loading sessions: %w", err)
		}
		loaded += k
	}
	return fmt.Sprintf("%s, applied %d control changes and %d sessions", summary, state, loaded), nil
}

// subscribe receives the channel and applies what peers publish. A
// subscription that holds after a reconciliation loaded the shared state
// (a resubscription after an outage, or the first one when it was slow)
// may have missed messages: it asks for another.
func (n *Node) subscribe(ctx context.Context) {
	ps := n.rdb.Subscribe(ctx, n.keys.channel)
	defer ps.Close()
	for ctx.Err() == nil {
		msg, err := ps.ReceiveTimeout(ctx, 5*heartbeatEvery)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // nothing published: fine, the heartbeat checks health
			}
			if errors.Is(err, redis.ErrClosed) || ctx.Err() != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryPause):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			n.subscribeOnce.Do(func() { close(n.subscribed) })
			if n.reconciles.Load() > 0 {
				kick(n.reconcileKick)
			}
		case *redis.Message:
			n.receive([]byte(m.Payload))
		}
	}
}

// receive applies one publication.
func (n *Node) receive(payload []byte) {
	m, err := decodeMessage(payload)
	if err != nil {
		n.log.Debugf("cluster: %v", err)
		return
	}
	if m.Node == n.name {
		return // our own, echoed by Redis
	}
	now := time.Now()
	p := n.heard(m.Node, now)
	for i := range m.Sessions {
		r := &m.Sessions[i]
		if n.applySession(r, now) {
			n.observeLag(p, now.Sub(m.Sent.Add(-r.Wait)))
		}
	}
	for _, r := range m.State {
		if n.applyState(r) {
			n.observeLag(p, time.Since(m.Sent.Add(-r.Wait)))
		}
	}
	if len(m.Purges) > 0 {
		n.applyPurges(m.Purges)
	}
}
