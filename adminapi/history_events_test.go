package adminapi

import (
	"strings"
	"testing"
	"time"
)

// tbfState is a State whose listener 0 ("front") and its service "web"
// have one TBF condition each, with the given refusal counters.
func tbfState(listenerRefused, serviceRefused uint64) *State {
	return &State{Listeners: []Listener{{Name: "front",
		Limits: Limits{RateLimits: []RateLimit{{Key: "%a", Refused: listenerRefused}}},
		Services: []Service{{Name: "web",
			Limits: Limits{RateLimits: []RateLimit{{Key: "%{X-Key}i", Refused: serviceRefused}}}}},
	}}}
}

// eventLines renders events oldest first as "kind|object|detail".
func eventLines(evs []Event) []string {
	var out []string
	for i := len(evs) - 1; i >= 0; i-- {
		out = append(out, evs[i].Kind+"|"+evs[i].Object+"|"+evs[i].Detail)
	}
	return out
}

func TestTimelineTBFRefusals(t *testing.T) {
	tests := []struct {
		name    string
		refused [][2]uint64 // per second: the listener's and the service's counters
		want    []string
	}{
		{"no refusal, no event", [][2]uint64{{0, 0}, {0, 0}, {0, 0}}, nil},
		{"counts at start are history, not news", [][2]uint64{{50, 7}, {50, 7}}, nil},
		{"a run of refusals is one start event", [][2]uint64{{0, 0}, {3, 0}, {9, 0}, {20, 0}},
			[]string{"tbf|TBF 0 (%a) of listener \"front\"|refusing requests: 3 in the last second"}},
		{"a run ends after tbfQuiet without refusals", [][2]uint64{{0, 0}, {0, 2}, {0, 6}, {0, 6}, {0, 6}, {0, 6}, {0, 6}, {0, 6}, {0, 6}},
			[]string{
				"tbf|TBF 0 (%{X-Key}i) of service \"web\"|refusing requests: 2 in the last second",
				"tbf|TBF 0 (%{X-Key}i) of service \"web\"|stopped refusing: 6 requests refused over 1s",
			}},
		{"a pause shorter than tbfQuiet does not end the run", [][2]uint64{{0, 0}, {1, 0}, {1, 0}, {1, 0}, {2, 0}, {2, 0}},
			[]string{"tbf|TBF 0 (%a) of listener \"front\"|refusing requests: 1 in the last second"}},
		{"a counter that went back starts afresh", [][2]uint64{{0, 0}, {0, 0}, {40, 0}, {2, 0}, {2, 0}},
			[]string{"tbf|TBF 0 (%a) of listener \"front\"|refusing requests: 40 in the last second"}},
	}
	t0 := time.Unix(5000, 0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObserver()
			for i, r := range tc.refused {
				o.Sample(tbfState(r[0], r[1]), t0.Add(time.Duration(i)*time.Second))
			}
			got := eventLines(o.Events.Since(0))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// clusterState is a State of a cluster member "self" that hears from
// peers; a peer named "-name" is listed but no longer heard from.
func clusterState(connected bool, peers ...string) *State {
	c := &ClusterStatus{Node: "self", Redis: "127.0.0.1:6379", Connected: connected,
		Nodes: []ClusterNode{{Name: "self", Self: true}}}
	if !connected {
		c.LastError = "dial tcp 127.0.0.1:6379: connect: connection refused"
	}
	for _, p := range peers {
		name, silent := strings.CutPrefix(p, "-")
		n := ClusterNode{Name: name, Connected: !silent}
		if silent {
			n.LastContact = time.Date(2026, 12, 5, 3, 4, 5, 6e6, time.UTC)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return &State{Cluster: c}
}

func TestTimelineCluster(t *testing.T) {
	tests := []struct {
		name  string
		snaps []*State
		want  []string
	}{
		{"members at start did not join", []*State{clusterState(true, "b", "c"), clusterState(true, "b", "c")}, nil},
		{"join and leave", []*State{clusterState(true, "b"), clusterState(true, "b", "c"), clusterState(true, "c")},
			[]string{`join|cluster member "c"|`, `leave|cluster member "b"|no longer listed`}},
		{"a member no longer heard from left, and joins when heard again", []*State{
			clusterState(true, "b"), clusterState(true, "-b"), clusterState(true, "-b"), clusterState(true, "b")},
			[]string{`leave|cluster member "b"|not heard from since 03:04:05.006`, `join|cluster member "b"|`}},
		{"a member listed but silent at start never joined", []*State{clusterState(true, "-b"), clusterState(true, "-b")}, nil},
		{"Redis lost and back", []*State{clusterState(true), clusterState(false), clusterState(false), clusterState(true)},
			[]string{"cluster|Redis 127.0.0.1:6379|unreachable: dial tcp 127.0.0.1:6379: connect: connection refused",
				"cluster|Redis 127.0.0.1:6379|reachable again"}},
		{"no cluster, no event", []*State{{}, {}}, nil},
	}
	t0 := time.Unix(5000, 0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObserver()
			for i, st := range tc.snaps {
				o.Sample(st, t0.Add(time.Duration(i)*time.Second))
			}
			got := eventLines(o.Events.Since(0))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
