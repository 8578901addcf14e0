package engine

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"lbd/adminapi"
)

// TestStreamSummaryMatchesSummary checks that the sampler's stream
// hands over what Summary holds, in State's order, although it reuses
// one service's backends from service to service (services of 3, 1 and
// 2 backends, so a shorter one follows a longer one), listeners first
// then the global services.
func TestStreamSummaryMatchesSummary(t *testing.T) {
	src := twoBackends + `ListenHTTP
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
	e, err := New(load(t, strings.Replace(src, "PRIO", "5", 1)), Options{Log: quietLog()})
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
