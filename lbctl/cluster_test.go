package lbctl

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"lbd/adminapi"
)

// clusterStatus is a member of two with one peer's lag measured.
func clusterStatus(connected bool) *adminapi.ClusterStatus {
	c := &adminapi.ClusterStatus{
		Node: "lb-a", Redis: "10.0.0.10:6379", Connected: connected, Since: fakeNow.Add(-time.Minute),
		SessionsSent: 10, SessionsApplied: 12, StateSent: 1, StateApplied: 2,
		LagCount: 14, LagWindow: 14, LagP50: 500 * time.Microsecond, LagP99: 2500 * time.Microsecond,
		Nodes: []adminapi.ClusterNode{
			{Name: "lb-a", Self: true, LastContact: fakeNow.Add(-300 * time.Millisecond), Connected: connected},
			{Name: "lb-b", LastContact: fakeNow.Add(-2 * time.Second), LagP50: 500 * time.Microsecond,
				LagP99: 2500 * time.Microsecond, LagWindow: 14, Applied: 14, Connected: true},
		},
	}
	if !connected {
		c.LastError, c.StatePending = "dial unix /run/redis.sock: connect: no such file or directory", 1
	}
	return c
}

func TestWriteCluster(t *testing.T) {
	tests := []struct {
		name      string
		connected bool
		want      string
	}{
		{name: "connected", connected: true, want: `cluster: node lb-a, Redis 10.0.0.10:6379 up since 1m0s ago, 2 nodes, lag p50 500µs p99 2.5ms over the last 14 changes
sessions: 10 sent, 12 applied, 0 dropped; runtime state: 1 sent, 2 applied, 0 pending, 0 kept
NODE  SELF  REDIS  LAST CONTACT  LAG P50  LAG P99  APPLIED
lb-a  yes   up     300ms ago     -        -        -
lb-b  -     up     2s ago        500µs    2.5ms    14
`},
		{name: "Redis down", want: `cluster: node lb-a, Redis 10.0.0.10:6379 down since 1m0s ago (dial unix /run/redis.sock: connect: no such file or directory); serving from the local state, 2 nodes, lag p50 500µs p99 2.5ms over the last 14 changes
sessions: 10 sent, 12 applied, 0 dropped; runtime state: 1 sent, 2 applied, 1 pending, 0 kept
NODE  SELF  REDIS  LAST CONTACT  LAG P50  LAG P99  APPLIED
lb-a  yes   down   300ms ago     -        -        -
lb-b  -     up     2s ago        500µs    2.5ms    14
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := &fakeController{st: fixture()}
			fc.st.Cluster = clusterStatus(tt.connected)
			reply := do(t, adminapi.NewPoundHandler(fc), "/cluster")
			var v clusterView
			if err := json.Unmarshal(reply, &v); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := writeCluster(&out, &v, fakeNow); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out.String(), tt.want)
			}
		})
	}
}

// TestClusterCommand runs lbctl cluster and list on both sockets.
func TestClusterCommand(t *testing.T) {
	for _, dialect := range []string{"pound", "zproxy"} {
		t.Run(dialect, func(t *testing.T) {
			fc := &fakeController{st: fixture()}
			fc.st.Cluster = clusterStatus(true)
			h := adminapi.NewPoundHandler(fc)
			if dialect == "zproxy" {
				h = adminapi.NewZproxyHandler(fc)
			}
			sock := serve(t, h)
			r := run(nil, "lbctl", "-s", sock, "cluster")
			if r.code != 0 || !strings.Contains(r.stdout, "cluster: node lb-a, Redis 10.0.0.10:6379 up") ||
				!strings.Contains(r.stdout, "\nlb-b  -     up") {
				t.Fatalf("lbctl cluster: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r = run(nil, "lbctl", "-s", sock, "-j", "cluster")
			if r.code != 0 || !strings.Contains(r.stdout, `"node"`) {
				t.Fatalf("lbctl -j cluster: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r = run(nil, "lbctl", "-s", sock, "list")
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if r.code != 0 || !strings.HasPrefix(lines[len(lines)-1], "cluster: node lb-a, Redis 10.0.0.10:6379 up") {
				t.Fatalf("lbctl list does not end with the cluster line: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

func TestClusterCommandWithoutCluster(t *testing.T) {
	for _, dialect := range []string{"pound", "zproxy"} {
		t.Run(dialect, func(t *testing.T) {
			var sock string
			if dialect == "pound" {
				sock, _ = poundServer(t, true)
			} else {
				sock, _ = zproxyServer(t)
			}
			r := run(nil, "lbctl", "-s", sock, "cluster")
			if r.code != 1 || !strings.Contains(r.stderr, "not in a cluster") {
				t.Fatalf("lbctl cluster without a cluster: %d %q", r.code, r.stderr)
			}
			if r := run(nil, "lbctl", "-s", sock, "list"); strings.Contains(r.stdout, "cluster") {
				t.Fatalf("lbctl list mentions a cluster:\n%s", r.stdout)
			}
		})
	}
}

// do serves GET path from h and returns the body.
func do(t *testing.T, h http.Handler, path string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d", path, rec.Code)
	}
	return rec.Body.Bytes()
}
