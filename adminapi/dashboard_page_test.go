package adminapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// pagedFixture is a state of 5 + 2 listener services and one global one,
// each service with one backend at 10.0.0.N.
func pagedFixture() *State {
	svcs := func(prefix string, n, addr int) []Service {
		var out []Service
		for i := 0; i < n; i++ {
			a := fmt.Sprintf("10.0.0.%d", addr+i)
			out = append(out, Service{Name: fmt.Sprintf("%s%d", prefix, i), Enabled: true,
				Backends: []Backend{{Kind: KindRegular, Address: a, Port: 80, ID: a + "-80", Enabled: true, Alive: true}}})
		}
		return out
	}
	return &State{
		Listeners: []Listener{{Address: "127.0.0.1", Port: 80, Services: svcs("s", 5, 0)},
			{Address: "127.0.0.1", Port: 81, Services: svcs("t", 2, 5)}},
		Services: svcs("g", 1, 7),
	}
}

// TestDashboardStatePages checks api/state's paging: services counted
// across listeners then the global ones, State indices kept, the filter
// on names and backend addresses, the total, and refused parameters.
func TestDashboardStatePages(t *testing.T) {
	f := &fakeCtl{st: pagedFixture()}
	cases := []struct {
		name, query string
		want        string // listener index: service indices; ...
		total       int
	}{
		{name: "first page", query: "offset=0&limit=3", want: "0:0,1,2", total: 8},
		{name: "a page across two listeners", query: "offset=4&limit=3", want: "0:4 1:0,1", total: 8},
		{name: "the global services last", query: "offset=7&limit=3", want: "-1:0", total: 8},
		{name: "past the end", query: "offset=100&limit=3", want: "", total: 8},
		{name: "limit alone", query: "limit=2", want: "0:0,1", total: 8},
		{name: "filter by name, any case", query: "offset=0&limit=10&q=T1", want: "1:1", total: 1},
		{name: "filter by backend address", query: "offset=0&limit=10&q=10.0.0.3", want: "0:3", total: 1},
		{name: "filter by address and port", query: "offset=0&limit=10&q=10.0.0.6:80", want: "1:1", total: 1},
		{name: "filter then page", query: "offset=1&limit=1&q=s", want: "0:1", total: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(NewDashboard(f), http.MethodGet, "/d/api/state?"+tc.query, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			var st dashState
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range st.Listeners {
				var idx []string
				for _, s := range l.Services {
					idx = append(idx, fmt.Sprint(s.Index))
					if want := f.st.service(l.Index, s.Index).Name; s.Name != want {
						t.Errorf("listener %d service %d is %q, State has %q there", l.Index, s.Index, s.Name, want)
					}
				}
				got = append(got, fmt.Sprintf("%d:%s", l.Index, strings.Join(idx, ",")))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("page %q, want %q", g, tc.want)
			}
			if st.Page == nil || st.Page.Total != tc.total {
				t.Errorf("page %+v, want total %d", st.Page, tc.total)
			}
		})
	}
	for _, q := range []string{"offset=-1", "limit=x", "offset=1e3"} {
		if rec := do(NewDashboard(f), http.MethodGet, "/d/api/state?"+q, ""); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, rec.Code)
		}
	}
	// Without paging parameters: everything, and no page member.
	rec := do(NewDashboard(f), http.MethodGet, "/d/api/state", "")
	if strings.Contains(rec.Body.String(), `"page"`) {
		t.Errorf("an unpaged reply has a page member: %s", rec.Body)
	}
}

func (st *State) service(li, si int) *Service {
	if li < 0 {
		return &st.Services[si]
	}
	return &st.Listeners[li].Services[si]
}

func TestHistorySeriesFilter(t *testing.T) {
	keep := seriesOf(url.Values{"services": {"0/1,-1/0"}})
	got := map[string]bool{}
	for _, k := range []string{"0/1", "0/1/10.0.0.1-80", "0/1/#0", "0/10", "0/10/x", "1/1", "-1/0", "-1/0/y", "-1/01"} {
		got[k] = keep(k)
	}
	want := map[string]bool{"0/1": true, "0/1/10.0.0.1-80": true, "0/1/#0": true, "0/10": false, "0/10/x": false,
		"1/1": false, "-1/0": true, "-1/0/y": true, "-1/01": false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if seriesOf(url.Values{}) != nil {
		t.Errorf("no services parameter must keep every series")
	}
	if none := seriesOf(url.Values{"services": {""}}); none == nil || none("0/1") {
		t.Errorf("an empty services list must keep no series")
	}
}
