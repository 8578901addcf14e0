package adminapi

import "time"

// ChangeKind says what a Change did.
type ChangeKind uint8

// The control changes a cluster replicates, and the local events it must
// know of.
const (
	// ChangeEnabled: a listener, service or backend was enabled or
	// disabled (Enabled).
	ChangeEnabled ChangeKind = iota + 1
	// ChangeBackendAdded: a backend was added to a service at runtime
	// (Spec; Backend names it).
	ChangeBackendAdded
	// ChangeLogLevel: a listener's request log format, or with Listener
	// "" the global one, was set (Level; "" clears a listener's own).
	ChangeLogLevel
	// ChangeReloaded: the configuration was replaced (a reload, or a
	// rebuild after a DNS change). Never replicated: it tells a cluster
	// to attach to the new objects and re-apply its state to them.
	ChangeReloaded
	// ChangeBackendPriority: a backend's tier was set under a
	// RoutingPolicy (Spec.Priority). Under Pound's balancing, where the
	// Priority is the weight, setting it is a ChangeBackendWeight.
	ChangeBackendPriority
	// ChangeBackendWeight: a backend's balancing weight was set
	// (Spec.Weight): each instance applies it to what weighs in its own
	// service, Pound's Priority or zproxy's Weight.
	ChangeBackendWeight
	// ChangeBackendConnLimit: a backend's connection limit was set
	// (Spec.ConnLimit).
	ChangeBackendConnLimit
	// ChangeBackendRemoved: a backend was removed at runtime. A cluster
	// orders it with ChangeBackendAdded of the same backend: whichever
	// came last says whether the backend is there.
	ChangeBackendRemoved
)

// Change is one control change the engine applied, naming its object the
// way every instance of a cluster names it (not by index, which differs
// between configurations): Listener is the listener's name ("" for the
// global services and log level), Service the service's within it,
// Backend the backend's (see the engine's ObjectNames). Session edits are
// not Changes: the session table reports them itself.
type Change struct {
	Kind     ChangeKind
	Listener string
	Service  string
	Backend  string
	Enabled  bool
	Level    string
	Spec     BackendSpec
}

// Cluster is what the engine tells and asks a cluster member (package
// cluster), when one is configured.
type Cluster interface {
	// Changed is called after a change made through the control API was
	// applied, under the engine's lock: it must not block or call the
	// engine. Changes the cluster applies itself are not reported.
	Changed(Change)
	// Status is the member's state for the control API and the metrics.
	Status() *ClusterStatus
}

// ClusterStatus is a cluster member's view (an lbd extension to both
// dialects: GET /cluster, lbctl cluster, and the lbd_cluster_* metrics).
type ClusterStatus struct {
	// Node is this instance's name; Redis the store's address(es) as
	// configured; Connected whether the last exchange with it worked,
	// since Since; LastError the last failure ("" while connected).
	Node      string
	Redis     string
	Connected bool
	Since     time.Time
	LastError string
	// Nodes are the members known, this one included, by name.
	Nodes []ClusterNode
	// Session replication: changes sent, learned from peers and applied,
	// and dropped because the outgoing queue was full (those are sent
	// again by the next reconciliation).
	SessionsSent, SessionsApplied, SessionsDropped int64
	// State replication: control changes sent, applied from peers, and
	// still to be sent (Redis unreachable); Kept counts the changes for
	// objects this instance does not have, kept until a reload adds them.
	StateSent, StateApplied, StatePending, StateKept int64
	// Lag is the time from a change on a peer to its application here,
	// over every change applied (LagBuckets, cumulative counts for the
	// upper bounds LagBounds, and LagSum). LagP50 and LagP99 are
	// measured over the last LagWindow changes applied (at most 1024),
	// not read off the buckets.
	LagBounds      []time.Duration
	LagBuckets     []int64
	LagCount       int64
	LagSum         time.Duration
	LagP50, LagP99 time.Duration
	LagWindow      int
}

// ClusterNode is one member as this instance sees it.
type ClusterNode struct {
	Name string
	Self bool
	// LastContact is when this instance last heard from the member (for
	// itself: the last exchange with Redis); zero when never.
	LastContact time.Time
	// LagP50 and LagP99 are measured over the last LagWindow of the
	// member's changes applied here; Applied counts them all.
	LagP50, LagP99 time.Duration
	LagWindow      int
	Applied        int64
	// Connected is what the member last said of its Redis connection.
	Connected bool
}
