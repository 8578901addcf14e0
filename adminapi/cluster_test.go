package adminapi

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// clusterFixture is a member of three, connected, with lag samples.
func clusterFixture() *ClusterStatus {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return &ClusterStatus{
		Node: "lb-a", Redis: "10.0.0.10:6379", Connected: true, Since: at.Add(-time.Hour),
		Nodes: []ClusterNode{
			{Name: "lb-a", Self: true, LastContact: at.Add(-300 * time.Millisecond), Connected: true},
			{Name: "lb-b", LastContact: at.Add(-500 * time.Millisecond), LagP50: 500 * time.Microsecond,
				LagP99: 2500 * time.Microsecond, LagWindow: 120, Applied: 120, Connected: true},
			{Name: "lb-c"},
		},
		SessionsSent: 100, SessionsApplied: 120, SessionsDropped: 1,
		StateSent: 3, StateApplied: 2, StatePending: 1, StateKept: 1,
		LagBounds:  []time.Duration{time.Millisecond, 10 * time.Millisecond},
		LagBuckets: []int64{100, 118},
		LagCount:   122, LagSum: 300 * time.Millisecond,
		LagP50: 500 * time.Microsecond, LagP99: 2500 * time.Microsecond, LagWindow: 122,
	}
}

func TestClusterGolden(t *testing.T) {
	tests := []struct {
		name, path string
		zproxy     bool
	}{
		{name: "cluster_pound.json", path: "/cluster?indent=2"},
		{name: "cluster_zproxy.json", path: "/cluster", zproxy: true},
		{name: "metrics_cluster.txt", path: "/metrics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctl := newFake()
			ctl.st.Core.Timestamp = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			ctl.st.Cluster = clusterFixture()
			h := NewPoundHandler(ctl)
			if tc.zproxy {
				h = NewZproxyHandler(ctl)
			}
			rec := do(h, http.MethodGet, tc.path, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			checkGolden(t, tc.name, rec.Body.Bytes())
		})
	}
}

// TestNoClusterNoTrace: without a cluster, /cluster is an unknown path
// in both dialects and the metrics have no cluster family.
func TestNoClusterNoTrace(t *testing.T) {
	ctl := newFake()
	if rec := do(NewPoundHandler(ctl), http.MethodGet, "/cluster", ""); rec.Code != http.StatusNotFound {
		t.Errorf("Pound /cluster without a cluster: %d, want 404", rec.Code)
	}
	if rec := do(NewZproxyHandler(ctl), http.MethodGet, "/cluster", ""); rec.Code != http.StatusBadRequest || rec.Body.Len() != 0 {
		t.Errorf("zproxy /cluster without a cluster: %d %q, want a bare 400", rec.Code, rec.Body)
	}
	if rec := do(NewPoundHandler(ctl), http.MethodGet, "/metrics", ""); strings.Contains(rec.Body.String(), "lbd_cluster") {
		t.Errorf("metrics without a cluster mention it")
	}
	ctl.st.Cluster = clusterFixture()
	if rec := do(NewPoundHandler(ctl), http.MethodGet, "/cluster/x", ""); rec.Code != http.StatusNotFound {
		t.Errorf("Pound /cluster/x: %d, want 404", rec.Code)
	}
}
