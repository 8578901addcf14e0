package adminapi

import (
	"net/http"
	"strconv"
	"time"
)

// GET /cluster (both dialects, an lbd extension) shows the cluster member
// the instance is, with its peers; without a Cluster section it is 404 on
// the Pound socket and zproxy's bare 400 on the zproxy one, as for any
// unknown path. Times are RFC 3339 with milliseconds (UTC), durations
// integer microseconds.

// clusterObject is the JSON of a ClusterStatus.
func clusterObject(c *ClusterStatus) jobject {
	nodes := jarray{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		nodes = append(nodes, jobject{}.
			add("name", n.Name).add("self", n.Self).add("connected", n.Connected).
			add("last_contact", jsonTime(n.LastContact)).
			add("lag_p50_us", n.LagP50.Microseconds()).add("lag_p99_us", n.LagP99.Microseconds()).
			add("lag_samples", n.LagWindow).add("applied", n.Applied))
	}
	lastErr := any(nil)
	if c.LastError != "" {
		lastErr = c.LastError
	}
	return jobject{}.
		add("node", c.Node).add("redis", c.Redis).add("connected", c.Connected).
		add("since", jsonTime(c.Since)).add("last_error", lastErr).
		add("sessions_sent", c.SessionsSent).add("sessions_applied", c.SessionsApplied).
		add("sessions_dropped", c.SessionsDropped).
		add("state_sent", c.StateSent).add("state_applied", c.StateApplied).
		add("state_pending", c.StatePending).add("state_kept", c.StateKept).
		add("lag_p50_us", c.LagP50.Microseconds()).add("lag_p99_us", c.LagP99.Microseconds()).
		add("lag_samples", c.LagWindow).add("lag_count", c.LagCount).
		add("nodes", nodes)
}

// jsonTime is t in RFC 3339 with milliseconds, or null for the zero time.
func jsonTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// cluster is GET /cluster on the Pound socket.
func (a *poundAPI) cluster(q *poundReq) (any, *apiError) {
	switch {
	case q.view.st.Cluster == nil:
		return nil, errNoCluster
	case q.rest != "" && q.rest != "/":
		return nil, refuse(http.StatusNotFound, "no such endpoint: GET %s", q.r.URL.Path)
	}
	return clusterObject(q.view.st.Cluster), nil
}

// errNoCluster: GET /cluster of an instance that is not a cluster member.
var errNoCluster = &apiError{status: http.StatusNotFound, reason: "this lbd is not a cluster member: the configuration has no Cluster section"}

// getCluster is GET /cluster on the zproxy socket.
func (a *zproxyAPI) getCluster(q *zreq) zreply {
	if q.st.Cluster == nil {
		return zbare(http.StatusBadRequest, "%s", errNoCluster.reason)
	}
	return zjson(clusterObject(q.st.Cluster))
}

// The cluster's metric families; like every family they are printed only
// when they have samples, so an instance without a cluster shows none.
var clusterFamilies = []metricFamily{
	{name: "lbd_cluster_redis_up", typ: "gauge", help: "Whether the last exchange with Redis worked (1) or not (0)."},
	{name: "lbd_cluster_nodes", typ: "gauge", help: "Cluster members known, this one included."},
	{name: "lbd_cluster_node_last_contact_seconds", typ: "gauge", unit: "seconds", help: "Seconds since a member was last heard from."},
	{name: "lbd_cluster_sessions_sent", typ: "counter", help: "Session changes sent to the cluster."},
	{name: "lbd_cluster_sessions_applied", typ: "counter", help: "Session changes learned from peers and applied."},
	{name: "lbd_cluster_sessions_dropped", typ: "counter", help: "Session changes not queued because the queue was full (sent again on reconciliation)."},
	{name: "lbd_cluster_state_sent", typ: "counter", help: "Control changes sent to the cluster."},
	{name: "lbd_cluster_state_applied", typ: "counter", help: "Control changes learned from peers and applied."},
	{name: "lbd_cluster_state_pending", typ: "gauge", help: "Control changes waiting for Redis."},
	{name: "lbd_cluster_state_kept", typ: "gauge", help: "Control changes kept for objects this instance does not have."},
	{name: "lbd_cluster_replication_lag_seconds", typ: "histogram", unit: "seconds", help: "Time from a change on a peer to its application here."},
}

func init() { metricFamilies = append(metricFamilies, clusterFamilies...) }

// cluster adds the samples of a cluster member (none without one).
func (e *exposition) cluster(c *ClusterStatus, now time.Time) {
	if c == nil {
		return
	}
	node := [][2]string{{"node", c.Node}}
	e.add("lbd_cluster_redis_up", "", node, boolValue(c.Connected))
	e.add("lbd_cluster_nodes", "", node, strconv.Itoa(len(c.Nodes)))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.LastContact.IsZero() {
			continue
		}
		e.add("lbd_cluster_node_last_contact_seconds", "", with(node, "peer", n.Name), promSeconds(now.Sub(n.LastContact)))
	}
	for _, x := range []struct {
		fam string
		n   int64
	}{
		{"lbd_cluster_sessions_sent", c.SessionsSent}, {"lbd_cluster_sessions_applied", c.SessionsApplied},
		{"lbd_cluster_sessions_dropped", c.SessionsDropped},
		{"lbd_cluster_state_sent", c.StateSent}, {"lbd_cluster_state_applied", c.StateApplied},
	} {
		e.add(x.fam, "_total", node, strconv.FormatInt(x.n, 10))
	}
	e.add("lbd_cluster_state_pending", "", node, strconv.FormatInt(c.StatePending, 10))
	e.add("lbd_cluster_state_kept", "", node, strconv.FormatInt(c.StateKept, 10))
	const lag = "lbd_cluster_replication_lag_seconds"
	for i, b := range c.LagBounds {
		if i < len(c.LagBuckets) {
			e.add(lag, "_bucket", with(node, "le", promSeconds(b)), strconv.FormatInt(c.LagBuckets[i], 10))
		}
	}
	e.add(lag, "_bucket", with(node, "le", "+Inf"), strconv.FormatInt(c.LagCount, 10))
	e.add(lag, "_count", node, strconv.FormatInt(c.LagCount, 10))
	e.add(lag, "_sum", node, promSeconds(c.LagSum))
}

func promSeconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }
