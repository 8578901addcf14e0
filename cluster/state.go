package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"lbd/adminapi"
)

// pushState sends the control changes Redis lacks, as soon as they are
// made and again every heartbeat while some are left.
func (n *Node) pushState(ctx context.Context) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.stateKick:
		case <-t.C:
		}
		if !n.connected() {
			continue
		}
		if err := n.sendState(ctx, n.overlay.dirtyRecords()); err != nil {
			n.markDown(err)
			kick(n.reconcileKick)
		}
	}
}

// sendState stores records in the state hash (each unless Redis holds a
// later one for its field) and publishes them, in one round trip.
func (n *Node) sendState(ctx context.Context, recs []stateRecord) error {
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	now := time.Now()
	pipe := n.rdb.Pipeline()
	for i := range recs {
		hsetScript.EvalSha(ctx, pipe, []string{n.keys.state}, storedState(&recs[i]), fieldOf(&recs[i].Change))
	}
	msg := message{Kind: kindState, Node: n.name, Sent: now, State: recs}
	pipe.Publish(ctx, n.keys.channel, appendMessage(nil, &msg))
	if err := execPipe(ctx, n, pipe); err != nil {
		return err
	}
	for _, r := range recs {
		n.overlay.markSent(r)
	}
	n.stats.stateSent.Add(int64(len(recs)))
	n.touchedRedis()
	return nil
}

// applyState merges a peer's change (or one loaded from Redis) and, if
// it is the field's new value, applies it. It reports whether it did.
func (n *Node) applyState(r stateRecord) bool {
	n.clock.Observe(r.Stamp.TS)
	if !n.overlay.merge(r, false) {
		return false
	}
	n.stats.stateApplied.Add(1)
	n.applyToEngine(r)
	return true
}

// applyToEngine applies a record to the engine; one whose object this
// instance lacks is kept for a reload that may add it.
func (n *Node) applyToEngine(r stateRecord) {
	err := n.eng.ApplyChange(r.Change)
	n.overlay.setKept(r, errors.Is(err, adminapi.ErrNotFound))
	if err != nil && !errors.Is(err, adminapi.ErrNotFound) {
		n.log.Warnf("cluster: change from %s not applied: %v", r.Stamp.Tie, err)
	}
}

// watchReloads re-attaches to the session tables after every reload and
// re-applies the runtime state to the new objects: a reload changes the
// configuration underneath, not the cluster's state.
func (n *Node) watchReloads(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.reattachKick:
		}
		fresh := n.attach()
		for _, r := range n.overlay.sorted() {
			n.applyToEngine(r)
		}
		if !n.connected() {
			continue // the reconciliation loads them when Redis is back
		}
		for _, st := range fresh {
			if _, err := n.loadSessions(ctx, st); err != nil {
				n.markDown(err)
				kick(n.reconcileKick)
				break
			}
		}
	}
}

// loadState merges the state hash.
func (n *Node) loadState(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	all, err := n.rdb.HGetAll(ctx, n.keys.state).Result()
	if err != nil {
		return 0, err
	}
	applied := 0
	for _, v := range all {
		r, err := decodeStoredState([]byte(v))
		if err != nil {
			n.log.Debugf("cluster: skipping a stored change: %v", err)
			continue
		}
		if n.applyState(r) {
			applied++
		}
	}
	return applied, nil
}

// execPipe runs a pipeline; a script Redis forgot (it restarted) is
// loaded and the pipeline run once more.
func execPipe(ctx context.Context, n *Node, pipe redis.Pipeliner) error {
	cmds := pipe.Cmds()
	_, err := pipe.Exec(ctx)
	if err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return err
	}
	if err := loadScripts(ctx, n.rdb); err != nil {
		return err
	}
	again := n.rdb.Pipeline()
	for _, c := range cmds {
		again.Do(ctx, c.Args()...)
	}
	_, err = again.Exec(ctx)
	return err
}

// isNil reports a missing key, which is not a failure.
func isNil(err error) bool { return errors.Is(err, redis.Nil) }
