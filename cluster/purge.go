package cluster

import (
	"context"
	"time"
)

// CachePurger is the part of the engine that purges its shared caches
// without telling the cluster again.
type CachePurger interface {
	PurgeCacheLocal(host, target string, prefix bool) int
}

// Purged publishes a purge made through this instance's control API, so
// that every instance purges its own caches. A purge is an event, not
// state: it is published, not stored, and an instance cut off from Redis
// at that moment misses it (its copies then age out as usual).
func (n *Node) Purged(host, target string, prefix bool) {
	msg := message{Kind: kindPurge, Node: n.name, Sent: time.Now(),
		Purges: []purgeRecord{{Host: host, Target: target, Prefix: prefix}}}
	payload := appendMessage(nil, &msg)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		if err := n.rdb.Publish(ctx, n.keys.channel, payload).Err(); err != nil {
			n.log.Warnf("cluster: cache purge of %s%s not published: %v", host, target, err)
		}
	}()
}

// applyPurges purges what a peer purged.
func (n *Node) applyPurges(ps []purgeRecord) {
	p, ok := n.eng.(CachePurger)
	if !ok {
		return
	}
	for _, r := range ps {
		p.PurgeCacheLocal(r.Host, r.Target, r.Prefix)
	}
}
