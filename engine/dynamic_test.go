package engine

import (
	"io"
	"net/netip"
	"slices"
	"strconv"
	"testing"

	"github.com/sirupsen/logrus"

	"lbd/backend"
	"lbd/config"
)

func quietLog() *logrus.Logger {
	l := logrus.New()
	l.Out = io.Discard
	return l
}

func ips(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name      string
		old, next []netip.Addr
		want      []netip.Addr
		changed   bool
	}{
		{name: "first answer", next: ips("127.0.0.1", "127.0.0.2"), want: ips("127.0.0.1", "127.0.0.2"), changed: true},
		{name: "same set in another order keeps the old order", old: ips("127.0.0.1", "127.0.0.2"),
			next: ips("127.0.0.2", "127.0.0.1"), want: ips("127.0.0.1", "127.0.0.2")},
		{name: "new address appended", old: ips("127.0.0.2"), next: ips("127.0.0.1", "127.0.0.2", "127.0.0.3"),
			want: ips("127.0.0.2", "127.0.0.1", "127.0.0.3"), changed: true},
		{name: "address gone", old: ips("127.0.0.1", "127.0.0.2"), next: ips("127.0.0.2"), want: ips("127.0.0.2"), changed: true},
		{name: "replaced", old: ips("127.0.0.1"), next: ips("127.0.0.2"), want: ips("127.0.0.2"), changed: true},
		{name: "no records", old: ips("127.0.0.1"), changed: true},
		{name: "duplicates collapse", next: ips("::1", "::1"), want: ips("::1"), changed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := merge(tc.old, tc.next)
			if !slices.Equal(got, tc.want) || changed != tc.changed {
				t.Errorf("got %v changed %v, want %v changed %v", got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestChildConfig(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.5:8081")
	tests := []struct {
		name   string
		matrix config.Backend
		child  child
		prio   int
	}{
		{name: "address record keeps the matrix priority", matrix: matrixOf(7, config.ResolveAll),
			child: child{addr: addr}, prio: 7},
		{name: "SRV weight is the priority", matrix: matrixOf(7, config.ResolveSRV),
			child: child{addr: addr, srv: true, weight: 40, maxWeight: 70}, prio: 40},
		{name: "SRV weight 0 beside others stays 0", matrix: matrixOf(7, config.ResolveSRV),
			child: child{addr: addr, srv: true, weight: 0, maxWeight: 70}, prio: 0},
		{name: "all SRV weights 0 make 1", matrix: matrixOf(7, config.ResolveSRV),
			child: child{addr: addr, srv: true, maxWeight: 0}, prio: 1},
		{name: "IgnoreSRVWeight keeps the matrix priority", matrix: ignoringSRVWeight(matrixOf(7, config.ResolveSRV)),
			child: child{addr: addr, srv: true, weight: 40, maxWeight: 70}, prio: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.matrix.Address = "be.example.org"
			cb := childConfig(&tc.matrix, tc.child)
			if cb.Priority != tc.prio || cb.Address != "127.0.0.5" || cb.Port != 8081 || cb.Dynamic() {
				t.Errorf("got %s:%d priority %d dynamic %v, want 127.0.0.5:8081 priority %d static",
					cb.Address, cb.Port, cb.Priority, cb.Dynamic(), tc.prio)
			}
			if tc.matrix.Address != "be.example.org" {
				t.Error("the matrix was modified")
			}
		})
	}
}

// The layout puts each group's configured backends first, then what
// matrices made, groups in increasing order, and points children at
// their matrix.
func TestLayout(t *testing.T) {
	srv := &config.Backend{Kind: config.BackendRegular, Address: "_web._tcp.example.org", Port: 80, Priority: 5}
	srv.SetRare().Resolve = config.ResolveSRV
	static := &config.Backend{Kind: config.BackendRegular, Address: "192.0.2.1", Port: 80, Priority: 5}
	svc := &config.Service{Backends: []*config.Backend{srv, static}}
	d := newDynamic(quietLog(), nil)
	key := matrixKey("l0", 0, svc, srv)
	d.matrices[key] = &matrix{cb: srv, targets: []*srvTarget{
		{host: "b", port: 8082, priority: 20, weight: 5, maxWeight: 5, addrs: ips("127.0.0.3")},
		{host: "a", port: 8081, priority: 10, weight: 3, maxWeight: 3, addrs: ips("127.0.0.1", "127.0.0.2")},
	}}
	b := &builder{cfg: &config.Config{}, dyn: d, next: &graph{backends: map[string]*backend.Backend{}, matrices: map[string]*config.Backend{}}}
	entries, bes := b.layout("l0", 0, svc)
	var got []string
	for _, e := range entries {
		switch {
		case e.Backend == nil:
			got = append(got, "matrix")
		default:
			got = append(got, e.Backend.Address()+"^"+strconv.Itoa(e.Parent)+"@"+strconv.Itoa(e.Backend.Group()))
		}
	}
	want := []string{"matrix", "192.0.2.1:80^-1@0", "127.0.0.1:8081^0@10", "127.0.0.2:8081^0@10", "127.0.0.3:8082^0@20"}
	if !slices.Equal(got, want) {
		t.Errorf("layout %v, want %v", got, want)
	}
	if len(bes) != 4 || b.next.matrices[key] != srv {
		t.Errorf("%d backends, matrices %v", len(bes), b.next.matrices)
	}
}

// matrixOf is a dynamic backend of priority prio resolved with mode.
func matrixOf(prio int, mode string) config.Backend {
	m := config.Backend{Priority: prio}
	m.SetRare().Resolve = mode
	return m
}

// ignoringSRVWeight is m with IgnoreSRVWeight set.
func ignoringSRVWeight(m config.Backend) config.Backend {
	m.SetRare().IgnoreSRVWeight = true
	return m
}
