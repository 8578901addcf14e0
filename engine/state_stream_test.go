package engine

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"lbd/adminapi"
)

// streamCfg: listeners of services of 2, 3 and 1 backends, and a
// global service of 2 (PRIO is twoBackends' priority).
const streamCfg = twoBackends + `ListenHTTP
	Address 127.0.0.1
	Port 18081
	Service "three"
		BackEnd
			Address 127.0.0.4
			Port 80
		End
		BackEnd
			Address 127.0.0.5
			Port 80
		End
		BackEnd
			Address 127.0.0.6
			Port 80
		End
	End
	Service "one"
		BackEnd
			Address 127.0.0.7
			Port 80
		End
	End
End
Service "global"
	BackEnd
		Address 127.0.0.9
		Port 80
	End
	BackEnd
		Address 127.0.0.10
		Port 80
	End
End
`

// TestStreamSummaryMatchesSummary checks that the sampler's stream
// hands over what Summary holds, in State's order, although it reuses
// one service's backends from service to service (services of 3, 1 and
// 2 backends, so a shorter one follows a longer one), listeners first
// then the global services.
func TestStreamSummaryMatchesSummary(t *testing.T) {
	e, err := New(load(t, strings.Replace(streamCfg, "PRIO", "5", 1)), Options{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	want := e.Summary()
	got := &adminapi.State{}
	got.Cluster = e.StreamSummary(func(li int, l *adminapi.Listener) {
		if li != len(got.Listeners) {
			t.Fatalf("listener %d after %d listeners", li, len(got.Listeners))
		}
		got.Listeners = append(got.Listeners, *l)
	}, func(li, si int, s *adminapi.Service) {
		c := *s
		c.Backends = slices.Clone(s.Backends)
		if li < 0 {
			if si != len(got.Services) {
				t.Fatalf("global service %d after %d", si, len(got.Services))
			}
			got.Services = append(got.Services, c)
			return
		}
		l := &got.Listeners[li]
		if si != len(l.Services) {
			t.Fatalf("listener %d: service %d after %d", li, si, len(l.Services))
		}
		l.Services = append(l.Services, c)
	})
	if len(got.Listeners) != 2 || len(got.Services) != 1 {
		t.Fatalf("streamed %d listeners and %d global services, want 2 and 1", len(got.Listeners), len(got.Services))
	}
	for li := range want.Listeners {
		if !reflect.DeepEqual(got.Listeners[li], want.Listeners[li]) {
			t.Errorf("listener %d:\n got %+v\nwant %+v", li, got.Listeners[li], want.Listeners[li])
		}
	}
	if !reflect.DeepEqual(got.Services, want.Services) {
		t.Errorf("global services:\n got %+v\nwant %+v", got.Services, want.Services)
	}
	if !reflect.DeepEqual(got.Cluster, want.Cluster) {
		t.Errorf("cluster %+v, want %+v", got.Cluster, want.Cluster)
	}
}

// TestStreamedSummaryMatchesSummary: StreamedSummary's State is
// Summary's without the services, its counts Summary's numbers of
// services, and its services, yielded in one reused value, Summary's in
// State's order.
func TestStreamedSummaryMatchesSummary(t *testing.T) {
	e, err := New(load(t, strings.Replace(streamCfg, "PRIO", "5", 1)), Options{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	want := e.Summary()
	got, counts, services := e.StreamedSummary()
	if len(counts.Listeners) != len(want.Listeners) || counts.Global != len(want.Services) {
		t.Fatalf("counts %+v for %d listeners and %d global services", counts, len(want.Listeners), len(want.Services))
	}
	var yielded []adminapi.Service
	for s := range services {
		c := *s
		c.Backends = slices.Clone(s.Backends)
		yielded = append(yielded, c)
	}
	for li := range got.Listeners {
		if got.Listeners[li].Services != nil {
			t.Fatalf("listener %d has services", li)
		}
		if n := counts.Listeners[li]; n != len(want.Listeners[li].Services) || n > len(yielded) {
			t.Fatalf("listener %d: count %d, want %d (%d yielded)", li, n, len(want.Listeners[li].Services), len(yielded))
		}
		got.Listeners[li].Services, yielded = yielded[:counts.Listeners[li]], yielded[counts.Listeners[li]:]
	}
	if got.Services != nil || len(yielded) != counts.Global {
		t.Fatalf("%d global services yielded for a count of %d", len(yielded), counts.Global)
	}
	if len(yielded) > 0 {
		got.Services = yielded
	}
	got.Core.Timestamp, got.Core.Uptime = want.Core.Timestamp, want.Core.Uptime
	if !reflect.DeepEqual(got, want) {
		t.Errorf("streamed summary:\n got %+v\nwant %+v", got, want)
	}
	for range services { // stopping early is allowed
		break
	}
}
