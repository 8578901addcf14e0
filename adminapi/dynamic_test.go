package adminapi

import (
	"net/http"
	"testing"
	"time"
)

// dynamicFake is a state with a Pound dynamic backend: a configured
// backend, an SRV matrix and two backends it made, in groups 10 and 20.
func dynamicFake() *fakeCtl {
	expire := time.Date(2026, 11, 25, 10, 0, 5, 0, time.Local)
	child := func(addr string, group, prio int) Backend {
		return Backend{Address: addr, Port: 8080, Enabled: true, Alive: true, Priority: prio, Group: group,
			HasParent: true, Parent: 1, ConnTimeout: 15 * time.Second, IOTimeout: 15 * time.Second,
			WSTimeout: 600 * time.Second, ResponseTime: -1}
	}
	return &fakeCtl{st: &State{
		Core:          Core{Version: "test", PID: 1},
		ControlSocket: "/run/lbd.ctl",
		Listeners: []Listener{{Address: "127.0.0.1", Port: 80, Enabled: true, Services: []Service{{
			Enabled: true,
			Backends: []Backend{
				{Address: "192.0.2.1", Port: 80, Enabled: true, Alive: true, Priority: 5, ResponseTime: -1},
				{Kind: KindMatrix, Enabled: true, Priority: 5, Hostname: "_web._tcp.example.org", ResolveMode: "srv",
					Family: 2, Expire: expire, ResponseTime: -1},
				child("127.0.0.2", 10, 40),
				child("127.0.0.3", 20, 1),
			},
		}}}},
	}}
}

func TestPoundDynamicGolden(t *testing.T) {
	tests := []struct{ name, path string }{
		{name: "pound_service_dynamic", path: "/listener/1/0"},
		{name: "pound_backend_matrix", path: "/listener/1/0/1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(NewPoundHandler(dynamicFake()), http.MethodGet, tc.path+"?indent=2", "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d, body %s", rec.Code, rec.Body)
			}
			checkGolden(t, tc.name+".json", rec.Body.Bytes())
		})
	}
}

// zproxy has no matrices: only the backends they made are listed.
func TestZproxyHidesMatrices(t *testing.T) {
	got := zBackends(&dynamicFake().st.Listeners[0].Services[0])
	if len(got) != 3 {
		t.Errorf("zproxy lists %d backends, want 3 (the matrix hidden)", len(got))
	}
}
