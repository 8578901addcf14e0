package backend

import (
	"testing"
	"time"
	"unsafe"
)

// newCases are the Options → identity cases of TestNewDefaults.
var newCases = []struct {
	name                 string
	o                    Options
	network, id          string
	probeNet, probeAddr  string
	weight, limit        int
	connTO               time.Duration
	enabled, alive, emer bool
}{
	{
		name:    "tcp defaults",
		o:       Options{Address: "10.0.0.1:8080", Priority: 5},
		network: "tcp", id: "10.0.0.1-8080",
		probeNet: "tcp", probeAddr: "10.0.0.1:8080",
		weight: 1, connTO: DefaultConnTO, enabled: true, alive: true,
	},
	{
		name:    "unix inferred from path",
		o:       Options{Address: "/run/app.sock"},
		network: "unix", id: "/run/app.sock",
		probeNet: "unix", probeAddr: "/run/app.sock",
		weight: 1, connTO: DefaultConnTO, enabled: true, alive: true,
	},
	{
		name:    "explicit id weight limit timeout",
		o:       Options{Network: "tcp", Address: "10.0.0.2:81", ID: "web1", Weight: 7, ConnLimit: 3, ConnTO: time.Second},
		network: "tcp", id: "web1",
		probeNet: "tcp", probeAddr: "10.0.0.2:81",
		weight: 7, limit: 3, connTO: time.Second, enabled: true, alive: true,
	},
	{
		name:    "bare HAport reuses the backend host",
		o:       Options{Address: "10.0.0.3:80", HAPort: "8081"},
		network: "tcp", id: "10.0.0.3-80",
		probeNet: "tcp", probeAddr: "10.0.0.3:8081",
		weight: 1, connTO: DefaultConnTO, enabled: true, alive: true,
	},
	{
		name:    "colon HAport",
		o:       Options{Address: "10.0.0.3:80", HAPort: ":9"},
		network: "tcp", id: "10.0.0.3-80",
		probeNet: "tcp", probeAddr: "10.0.0.3:9",
		weight: 1, connTO: DefaultConnTO, enabled: true, alive: true,
	},
	{
		name:    "full HAport address",
		o:       Options{Address: "10.0.0.3:80", HAPort: "10.9.9.9:7"},
		network: "tcp", id: "10.0.0.3-80",
		probeNet: "tcp", probeAddr: "10.9.9.9:7",
		weight: 1, connTO: DefaultConnTO, enabled: true, alive: true,
	},
	{
		name:    "unix backend with HAport probes localhost",
		o:       Options{Address: "/s", HAPort: "8081"},
		network: "unix", id: "/s",
		probeNet: "tcp", probeAddr: "127.0.0.1:8081",
		weight: 1, connTO: DefaultConnTO, enabled: true, alive: true,
	},
	{
		name:    "disabled emergency",
		o:       Options{Address: "10.0.0.4:80", Disabled: true, Emergency: true, Weight: -3, ConnLimit: -1},
		network: "tcp", id: "10.0.0.4-80",
		probeNet: "tcp", probeAddr: "10.0.0.4:80",
		weight: 1, connTO: DefaultConnTO, alive: true, emer: true,
	},
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	tests := newCases
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := New(tc.o)
			pn, pa := b.ProbeAddress()
			got := []any{b.Network(), b.ID(), pn, pa, b.Weight(), b.ConnLimit(), b.ConnTO(), b.Enabled(), b.Alive(), b.Emergency()}
			want := []any{tc.network, tc.id, tc.probeNet, tc.probeAddr, tc.weight, tc.limit, tc.connTO, tc.enabled, tc.alive, tc.emer}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %v, want %v", i, got[i], want[i])
				}
			}
			if b.Latency() != -1 || b.ConnectTime() != -1 {
				t.Errorf("averages before samples: latency %v connect %v, want -1", b.Latency(), b.ConnectTime())
			}
			if b.String() != tc.o.Address || b.Address() != tc.o.Address {
				t.Errorf("String/Address = %q/%q, want %q", b.String(), b.Address(), tc.o.Address)
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		limit           int
		disabled, dead  bool
		active, pending int64
		want            bool
	}{
		{name: "fresh", want: true},
		{name: "disabled", disabled: true},
		{name: "dead", dead: true},
		{name: "unlimited with many conns", active: 1000, pending: 1000, want: true},
		{name: "at limit", limit: 2, active: 1, pending: 1, want: true},
		{name: "limit plus one is over (zproxy rule)", limit: 2, active: 2, pending: 1},
		{name: "pending counts", limit: 1, pending: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lg, _ := testLogger()
			b := New(Options{Address: "10.0.0.1:80", ConnLimit: tc.limit, Disabled: tc.disabled, Logger: lg})
			if tc.dead {
				b.SetAlive(false, "test")
			}
			b.active.Store(int32(tc.active))
			b.pending.Store(int32(tc.pending))
			if got := b.Available(); got != tc.want {
				t.Errorf("Available() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFlipsLogAndNotifyOnce(t *testing.T) {
	t.Parallel()
	lg, buf := testLogger()
	b := New(Options{Address: "10.0.0.1:80", Logger: lg})
	calls := 0
	remove := b.OnChange(func() { calls++ })
	steps := []struct {
		name    string
		do      func() bool
		changed bool
		calls   int
	}{
		{name: "kill", do: func() bool { return b.SetAlive(false, "connection refused") }, changed: true, calls: 1},
		{name: "kill again is a no-op", do: func() bool { return b.SetAlive(false, "again") }, calls: 1},
		{name: "resurrect", do: func() bool { return b.SetAlive(true, "") }, changed: true, calls: 2},
		{name: "resurrect again", do: func() bool { return b.SetAlive(true, "") }, calls: 2},
		{name: "disable", do: func() bool { return b.SetEnabled(false) }, changed: true, calls: 3},
		{name: "disable again", do: func() bool { return b.SetEnabled(false) }, calls: 3},
		{name: "enable", do: func() bool { return b.SetEnabled(true) }, changed: true, calls: 4},
	}
	for _, s := range steps {
		if got := s.do(); got != s.changed || calls != s.calls {
			t.Errorf("%s: changed %v calls %d, want %v %d", s.name, got, calls, s.changed, s.calls)
		}
	}
	if n := buf.count("Backend 10.0.0.1:80 dead (connection refused)"); n != 1 {
		t.Errorf("dead lines = %d, want 1; log:\n%s", n, buf)
	}
	if n := buf.count("Backend 10.0.0.1:80 resurrected"); n != 1 {
		t.Errorf("resurrected lines = %d, want 1; log:\n%s", n, buf)
	}
	if buf.count("again") != 0 {
		t.Errorf("a no-op flip was logged:\n%s", buf)
	}
	remove()
	if b.HookCount() != 0 {
		t.Fatalf("HookCount after remove = %d", b.HookCount())
	}
	b.SetEnabled(false)
	if calls != 4 {
		t.Errorf("removed hook still called: %d", calls)
	}
}

func TestOnChangeSeveralHooks(t *testing.T) {
	t.Parallel()
	lg, _ := testLogger()
	b := New(Options{Address: "10.0.0.1:80", Logger: lg})
	var order []string
	rmA := b.OnChange(func() { order = append(order, "a") })
	b.OnChange(func() { order = append(order, "b") })
	b.SetEnabled(false)
	rmA()
	rmA() // removing twice is harmless
	b.SetEnabled(true)
	if got, want := len(order), 3; got != want || order[0] != "a" || order[1] != "b" || order[2] != "b" {
		t.Errorf("calls = %v, want [a b b]", order)
	}
	if b.HookCount() != 1 {
		t.Errorf("HookCount = %d, want 1", b.HookCount())
	}
}

func TestDoneCounters(t *testing.T) {
	t.Parallel()
	b := pipeBackend(t, Options{})
	c, err := b.Dial(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	samples := []struct {
		name    string
		status  int
		latency time.Duration
		ewma    time.Duration
	}{
		{name: "first sample sets the average", status: 200, latency: 80 * time.Millisecond, ewma: 80 * time.Millisecond},
		{name: "second moves it by 1/8", status: 404, latency: 0, ewma: 70 * time.Millisecond},
		{name: "error leaves it alone", status: 0, latency: time.Hour, ewma: 70 * time.Millisecond},
		{name: "5xx is a response", status: 503, latency: 150 * time.Millisecond, ewma: 80 * time.Millisecond},
		{name: "1xx counted", status: 101, latency: 80 * time.Millisecond, ewma: 80 * time.Millisecond},
		{name: "bogus status is an error", status: 600, latency: 0, ewma: 80 * time.Millisecond},
	}
	for _, s := range samples {
		b.Done(c, s.status, s.latency)
		if got := b.Latency(); got != s.ewma {
			t.Errorf("%s: latency %v, want %v", s.name, got, s.ewma)
		}
	}
	want := map[int]int64{1: 1, 2: 1, 3: 0, 4: 1, 5: 1, 0: 0, 6: 0}
	for class, n := range want {
		if got := b.StatusCount(class); got != n {
			t.Errorf("StatusCount(%d) = %d, want %d", class, got, n)
		}
	}
	// The sum counts the four samples with a status: 80+0+150+80 ms.
	if got := b.LatencyTotal(); got != 310*time.Millisecond {
		t.Errorf("LatencyTotal = %v, want 310ms (errors not counted)", got)
	}
	if b.Requests() != 6 || b.Errors() != 2 || c.Requests() != 6 {
		t.Errorf("requests %d errors %d conn requests %d, want 6 2 6", b.Requests(), b.Errors(), c.Requests())
	}
	b.Done(nil, 200, time.Millisecond) // nil conn is allowed
	if b.Requests() != 7 {
		t.Errorf("requests = %d after nil-conn Done", b.Requests())
	}
}

func TestDisableResetsConnectTime(t *testing.T) {
	t.Parallel()
	b := pipeBackend(t, Options{})
	c, err := b.Dial(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if b.ConnectTime() < 0 {
		t.Fatalf("ConnectTime = %v after a dial, want a sample", b.ConnectTime())
	}
	b.SetEnabled(false)
	if b.ConnectTime() != -1 {
		t.Errorf("ConnectTime = %v after disable, want -1", b.ConnectTime())
	}
}

// TestRuntimeSettings: Priority and Weight changes notify the balancers
// once per real change; a ConnLimit change does not (picks read it), and
// Available sees it at once.
func TestRuntimeSettings(t *testing.T) {
	t.Parallel()
	lg, _ := testLogger()
	b := New(Options{Address: "10.0.0.1:80", Priority: 5, Weight: 2, Logger: lg})
	calls := 0
	b.OnChange(func() { calls++ })
	b.active.Store(3)
	steps := []struct {
		name    string
		do      func() bool
		changed bool
		calls   int
		check   func() bool
	}{
		{name: "priority", do: func() bool { return b.SetPriority(9) }, changed: true, calls: 1, check: func() bool { return b.Priority() == 9 }},
		{name: "same priority", do: func() bool { return b.SetPriority(9) }, calls: 1, check: func() bool { return b.Priority() == 9 }},
		{name: "priority 0", do: func() bool { return b.SetPriority(0) }, changed: true, calls: 2, check: func() bool { return b.Priority() == 0 }},
		{name: "weight", do: func() bool { return b.SetWeight(7) }, changed: true, calls: 3, check: func() bool { return b.Weight() == 7 }},
		{name: "weight below 1 is 1", do: func() bool { return b.SetWeight(0) }, changed: true, calls: 4, check: func() bool { return b.Weight() == 1 }},
		{name: "same weight", do: func() bool { return b.SetWeight(1) }, calls: 4, check: func() bool { return b.Weight() == 1 }},
		{name: "limit under the load", do: func() bool { return b.SetConnLimit(2) }, changed: true, calls: 4,
			check: func() bool { return b.ConnLimit() == 2 && !b.Available() }},
		{name: "limit lifted", do: func() bool { return b.SetConnLimit(0) }, changed: true, calls: 4,
			check: func() bool { return b.ConnLimit() == 0 && b.Available() }},
		{name: "negative limit is none", do: func() bool { return b.SetConnLimit(-4) }, calls: 4,
			check: func() bool { return b.ConnLimit() == 0 }},
	}
	for _, s := range steps {
		if got := s.do(); got != s.changed || calls != s.calls || !s.check() {
			t.Errorf("%s: changed %v calls %d check %v, want %v %d true", s.name, got, calls, s.check(), s.changed, s.calls)
		}
	}
}

// TestBackendSize: a Backend fits the 288-byte size class (it was 464,
// the 480 class, then 416, then 320; the HTTP/2 pool and Protocol auto
// state went to backendRare, active and pending to 32 bits, the group
// to 16): at 20,000 backends each 32 bytes is 0.64 MB.
// What few backends have goes in backendRare, the probe statistics are
// made at the first probe. A field added past it should be a choice,
// not an accident of padding.
func TestBackendSize(t *testing.T) {
	if n := unsafe.Sizeof(Backend{}); n > 288 {
		t.Errorf("Backend is %d bytes, more than the 288-byte size class", n)
	}
}
