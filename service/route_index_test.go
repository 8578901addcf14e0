package service

import (
	"fmt"
	"net/netip"
	"testing"

	"lbd/config"
	"lbd/rules"
)

// hostRouter is a router of n services, service i matching Host
// "siteI.example.com" (or, with urls, URL "^/appI/"), built as the engine
// builds it.
func hostRouter(tb testing.TB, n int, urls bool) *Router {
	svcs := make([]*Service, n)
	for i := range n {
		c := &config.Condition{Kind: config.CondHost, Pattern: mustPattern(tb, config.MatchExact, fmt.Sprintf("site%d.example.com", i), true)}
		if urls {
			c = &config.Condition{Kind: config.CondURL, Pattern: mustPattern(tb, config.MatchRegex, fmt.Sprintf("^/app%d/", i), false)}
		}
		svcs[i] = svc(fmt.Sprint(i), c)
	}
	r := NewRouter(svcs)
	return &r
}

func loadLast(st *rules.State, n int, urls bool) {
	st.Begin(netip.Addr{}, 0)
	st.Req.Method = []byte("GET")
	if urls {
		st.Req.URL = fmt.Appendf(st.Req.URL[:0], "/app%d/index.html", n-1)
		st.Req.Lines = append(st.Req.Lines, []byte("Host: example.com"))
		return
	}
	st.Req.URL = []byte("/index.html")
	st.Req.Lines = append(st.Req.Lines, fmt.Appendf(nil, "Host: site%d.example.com", n-1))
}

// TestIndexedRouteAllocatesNothing: the indexed router routes without a
// heap allocation (the proxy's alloc tests cover a router too small for
// an index).
func TestIndexedRouteAllocatesNothing(t *testing.T) {
	for _, urls := range []bool{false, true} {
		r := hostRouter(t, 1000, urls)
		if !r.Indexed() {
			t.Fatal("1000 services and no index")
		}
		var st rules.State
		loadLast(&st, 1000, urls)
		method, lines, url := st.Req.Method, st.Req.Lines, st.Req.URL
		allocs := testing.AllocsPerRun(100, func() {
			st.Begin(netip.Addr{}, 0)
			st.Req.Method, st.Req.URL, st.Req.Lines = method, url, lines
			if s, err := r.Route(&st); err != nil || s != r.Services[999] {
				t.Fatalf("routed to %v, %v", s, err)
			}
		})
		if allocs != 0 {
			t.Fatalf("urls %v: %v allocations per request", urls, allocs)
		}
	}
}

// TestIndexedHeaderRouteAllocatesNothing: the same with services keyed
// by a header's value.
func TestIndexedHeaderRouteAllocatesNothing(t *testing.T) {
	svcs := make([]*Service, 100)
	for i := range svcs {
		svcs[i] = svc(fmt.Sprint(i), &config.Condition{Kind: config.CondHeader, Name: "X-Tenant",
			Pattern: mustPattern(t, config.MatchExact, fmt.Sprintf("t%d", i), false)})
	}
	r := NewRouter(svcs)
	var st rules.State
	st.Begin(netip.Addr{}, 0)
	method, url := []byte("GET"), []byte("/")
	lines := [][]byte{[]byte("Host: a"), []byte("x-tenant:  t99 ")}
	allocs := testing.AllocsPerRun(100, func() {
		st.Begin(netip.Addr{}, 0)
		st.Req.Method, st.Req.URL, st.Req.Lines = method, url, lines
		if s, err := r.Route(&st); err != nil || s != svcs[99] {
			t.Fatalf("routed to %v, %v", s, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request", allocs)
	}
}

// TestRouterEnableDisableWithIndex: the index files disabled services
// too, so turning one on or off at run time needs no rebuild.
func TestRouterEnableDisableWithIndex(t *testing.T) {
	r := hostRouter(t, 100, false)
	var st rules.State
	last := r.Services[99]
	last.SetEnabled(false)
	loadLast(&st, 100, false)
	if s, _ := r.Route(&st); s != nil {
		t.Fatalf("disabled service chosen: %v", s.Name)
	}
	last.SetEnabled(true)
	loadLast(&st, 100, false)
	if s, _ := r.Route(&st); s != last {
		t.Fatalf("re-enabled service not chosen: %v", s)
	}
}

// BenchmarkRouteLast routes to the last of n services, the router's worst
// case without an index.
func BenchmarkRouteLast(b *testing.B) {
	for _, urls := range []bool{false, true} {
		for _, n := range []int{1, 100, 1000, 10000} {
			r := hostRouter(b, n, urls)
			var st rules.State
			loadLast(&st, n, urls)
			method, lines, url := st.Req.Method, st.Req.Lines, st.Req.URL
			name := fmt.Sprintf("host/%d", n)
			if urls {
				name = fmt.Sprintf("url/%d", n)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					st.Begin(netip.Addr{}, 0)
					st.Req.Method, st.Req.URL, st.Req.Lines = method, url, lines
					if s, _ := r.Route(&st); s != r.Services[n-1] {
						b.Fatal("wrong service")
					}
				}
			})
		}
	}
}
