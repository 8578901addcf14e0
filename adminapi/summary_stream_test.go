package adminapi

import (
	"bytes"
	"cmp"
	"iter"
	"net/http"
	"strings"
	"testing"
)

// streamFake is the fake whose Summary is also streamed, as the engine
// streams it: zero services in the State, the services one at a time
// in one reused value, which is overwritten after it was handed over.
type streamFake struct {
	*fakeCtl
	streamed int // services handed over
	states   int // State calls
}

func (f *streamFake) State() *State {
	f.states++
	return f.fakeCtl.State()
}

func (f *streamFake) StreamedSummary() (*State, ServiceCounts, iter.Seq[*Service]) {
	full := f.fakeCtl.State()
	st := cloneState(full)
	counts := ServiceCounts{Global: len(full.Services)}
	for li := range st.Listeners {
		st.Listeners[li].Services = nil
		counts.Listeners = append(counts.Listeners, len(full.Listeners[li].Services))
	}
	st.Services = nil
	return st, counts, func(yield func(*Service) bool) {
		var sv Service
		each := func(svcs []Service) bool {
			for i := range svcs {
				sv = svcs[i]
				sv.Backends = append(sv.Backends[:0:0], svcs[i].Backends...)
				f.streamed++
				ok := yield(&sv)
				sv = Service{Name: "overwritten", Backends: sv.Backends[:0]}
				if !ok {
					return false
				}
			}
			return true
		}
		for li := range full.Listeners {
			if !each(full.Listeners[li].Services) {
				return
			}
		}
		each(full.Services)
	}
}

// TestStreamedListing: the full listings with ?sessions=count are printed
// from the streamed services, byte for byte what the State gives; the
// other replies do not stream.
func TestStreamedListing(t *testing.T) {
	plain := NewPoundHandler(newFake())
	sf := &streamFake{fakeCtl: newFake()}
	streamed := NewPoundHandler(sf)
	total := 0
	for _, l := range sf.State().Listeners {
		total += len(l.Services)
	}
	total += len(sf.State().Services)
	tests := []struct {
		path    string
		streams bool
		status  int // 0: 200
	}{
		{"/?sessions=count", true, 0},
		{"/listener?sessions=count", true, 0},
		{"/listener/?sessions=count&indent=2", true, 0},
		{"/listener/-?sessions=count", true, 0},
		{"/listener/1?sessions=count", false, 0},
		{"/listener/1/0?sessions=count", false, 0},
		{"/service/0?sessions=count", false, 0},
		{"/listener", false, 0},
		{"/", false, 0},
		{"/metrics", true, 0},
		{"/metrics?family=pound_backend_requests&family=lbd_service_state", true, 0},
		{"/core", false, 0},
		{"/core/?indent=3", false, 0},
		{"/core?sessions=count", false, 0},
		{"/core?sessions=all", false, http.StatusBadRequest},
		{"/cluster", false, http.StatusNotFound}, // no Cluster section
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			want := do(plain, http.MethodGet, tc.path, "")
			before, states := sf.streamed, sf.states
			got := do(streamed, http.MethodGet, tc.path, "")
			status := cmp.Or(tc.status, http.StatusOK)
			if got.Code != status || got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Fatalf("streamed reply %d:\n%s\nwant %d:\n%s", got.Code, got.Body, want.Code, want.Body)
			}
			n := sf.streamed - before
			if tc.streams && n != total || !tc.streams && n != 0 {
				t.Errorf("%d services streamed, want %d (streams: %v)", n, total, tc.streams)
			}
			if (strings.HasPrefix(tc.path, "/core") || tc.path == "/cluster") && sf.states != states {
				t.Errorf("GET %s took a State", tc.path)
			}
		})
	}
}

// TestWriteStreamedMetrics: the Metrics backend's exposition from the
// streamed services is WriteMetrics' of the State.
func TestWriteStreamedMetrics(t *testing.T) {
	sf := &streamFake{fakeCtl: newFake()}
	var want, got bytes.Buffer
	if err := WriteMetrics(&want, sf.State()); err != nil {
		t.Fatal(err)
	}
	if err := WriteStreamedMetrics(&got, sf); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() || sf.streamed == 0 {
		t.Fatalf("streamed (%d services):\n%s\nwant:\n%s", sf.streamed, got.String(), want.String())
	}
}

// TestStreamedCluster: GET /cluster of a member, from the State without
// services, is what the State gives.
func TestStreamedCluster(t *testing.T) {
	plain, sf := newFake(), &streamFake{fakeCtl: newFake()}
	plain.st.Cluster, sf.fakeCtl.st.Cluster = clusterFixture(), clusterFixture()
	want := do(NewPoundHandler(plain), http.MethodGet, "/cluster?indent=2", "")
	got := do(NewPoundHandler(sf), http.MethodGet, "/cluster?indent=2", "")
	if got.Code != http.StatusOK || got.Body.String() != want.Body.String() || sf.states != 0 {
		t.Fatalf("streamed %d (%d States):\n%s\nwant %d:\n%s", got.Code, sf.states, got.Body, want.Code, want.Body)
	}
}
