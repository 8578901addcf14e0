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

// TestStreamedSummaryMatchesSummary: the State StreamedSummary returns
// is Summary's with zero services, and its services, yielded in one
// reused value, are Summary's in State's order.
func TestStreamedSummaryMatchesSummary(t *testing.T) {
	e, err := New(load(t, strings.Replace(streamCfg, "PRIO", "5", 1)), Options{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	want := e.Summary()
	got, services := e.StreamedSummary()
	var all []*adminapi.Service // where the yielded values go, in order
	for li := range got.Listeners {
		if n, m := len(got.Listeners[li].Services), len(want.Listeners[li].Services); n != m {
			t.Fatalf("listener %d: %d services, want %d", li, n, m)
		}
		for si := range got.Listeners[li].Services {
			if !reflect.DeepEqual(got.Listeners[li].Services[si], adminapi.Service{}) {
				t.Fatalf("listener %d: service %d is not a zero Service", li, si)
			}
			all = append(all, &got.Listeners[li].Services[si])
		}
	}
	for si := range got.Services {
		all = append(all, &got.Services[si])
	}
	n := 0
	for s := range services {
		if n >= len(all) {
			t.Fatalf("more than %d services yielded", len(all))
		}
		*all[n] = *s
		all[n].Backends = slices.Clone(s.Backends)
		n++
	}
	if n != len(all) {
		t.Fatalf("%d services yielded, want %d", n, len(all))
	}
	got.Core.Timestamp, got.Core.Uptime = want.Core.Timestamp, want.Core.Uptime
	if !reflect.DeepEqual(got, want) {
		t.Errorf("streamed summary:\n got %+v\nwant %+v", got, want)
	}
	for range services { // stopping early is allowed
		break
	}
}
