package balancer

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"lbd/backend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = func() *logrus.Logger {
	l := logrus.New()
	l.Out = io.Discard
	return l
}()

// spec describes one test backend.
type spec struct {
	prio, weight, limit int
	group               int // Pound balancer group
	emergency, disabled bool
	dead                bool
}

// dialer makes in-memory conns; while gated, dials block so that the test
// can hold connects in Pending.
type dialer struct {
	mu      sync.Mutex
	gate    chan struct{}
	waiting map[chan struct{}]int // dials held at each gate
	peers   []net.Conn
}

func (d *dialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	d.mu.Lock()
	gate := d.gate
	if gate != nil {
		if d.waiting == nil {
			d.waiting = map[chan struct{}]int{}
		}
		d.waiting[gate]++
	}
	d.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c, s := net.Pipe()
	d.mu.Lock()
	d.peers = append(d.peers, s)
	d.mu.Unlock()
	return c, nil
}

// held returns how many dials wait at gate.
func (d *dialer) held(gate chan struct{}) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waiting[gate]
}

// fixture is a set of test backends plus their dialers.
type fixture struct {
	t       testing.TB
	bs      []*backend.Backend
	dialers []*dialer
}

func newFixture(t testing.TB, specs ...spec) *fixture {
	t.Helper()
	f := &fixture{t: t}
	for i, s := range specs {
		d := &dialer{}
		be := backend.New(backend.Options{
			Address:     fmt.Sprintf("10.0.0.%d:80", i+1),
			Priority:    s.prio,
			Weight:      s.weight,
			ConnLimit:   s.limit,
			Emergency:   s.emergency,
			Group:       s.group,
			Disabled:    s.disabled,
			Logger:      quiet,
			DialContext: d.dial,
		})
		if s.dead {
			be.SetAlive(false, "test")
		}
		f.bs = append(f.bs, be)
		f.dialers = append(f.dialers, d)
	}
	t.Cleanup(func() {
		for _, d := range f.dialers {
			d.mu.Lock()
			for _, p := range d.peers {
				p.Close()
			}
			d.mu.Unlock()
		}
	})
	return f
}

// weights builds backends with the given Pound priorities (PoundMode) or
// zproxy weights (priority 1).
func weights(t testing.TB, mode Mode, ws ...int) *fixture {
	t.Helper()
	specs := make([]spec, len(ws))
	for i, w := range ws {
		specs[i] = spec{prio: w, weight: w}
		if mode == ZproxyMode {
			specs[i].prio = 1
		}
	}
	return newFixture(t, specs...)
}

// hold opens n established connections to backend i until the test ends.
func (f *fixture) hold(i, n int) {
	f.t.Helper()
	for range n {
		f.t.Cleanup(f.open(i))
	}
}

// open opens one established connection to backend i and returns its
// closer.
func (f *fixture) open(i int) (release func()) {
	f.t.Helper()
	c, err := f.bs[i].Dial(time.Time{})
	if err != nil {
		f.t.Fatal(err)
	}
	return func() { c.Close() }
}

// holdPending starts n connects to backend i that stay pending until the
// test ends.
func (f *fixture) holdPending(i, n int) {
	f.t.Helper()
	f.t.Cleanup(f.pend(i, n))
}

// pend starts n connects to backend i that stay pending until release.
func (f *fixture) pend(i, n int) (release func()) {
	f.t.Helper()
	d := f.dialers[i]
	gate := make(chan struct{})
	d.mu.Lock()
	d.gate = gate
	d.mu.Unlock()
	want := f.bs[i].Pending() + int64(n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, err := f.bs[i].Dial(time.Time{}); err == nil {
				c.Close()
			}
		}()
	}
	// Wait until the dials hold at this gate, not merely count as
	// pending: a dial that read the gate only after a later pend had set
	// its own would wait for the wrong release (and time out after the
	// connect timeout, marking the backend dead).
	for f.bs[i].Pending() < want || d.held(gate) < n {
		runtime.Gosched()
	}
	return func() {
		d.mu.Lock()
		if d.gate == gate {
			d.gate = nil
		}
		d.mu.Unlock()
		close(gate)
		wg.Wait()
	}
}

// index returns the position of be in the fixture, -1 for nil.
func (f *fixture) index(be *backend.Backend) int {
	for i, b := range f.bs {
		if b == be {
			return i
		}
	}
	return -1
}

// counts picks n times and returns how often each backend was chosen;
// index len(bs) counts nil picks.
func (f *fixture) counts(a Algorithm, n int) []int {
	out := make([]int, len(f.bs)+1)
	for range n {
		i := f.index(a.Pick())
		if i < 0 {
			i = len(f.bs)
		}
		out[i]++
	}
	return out
}

// sequence returns the indexes of n consecutive picks as letters A, B, ...
func (f *fixture) sequence(a Algorithm, n int) string {
	b := make([]byte, n)
	for k := range b {
		i := f.index(a.Pick())
		if i < 0 {
			b[k] = '-'
			continue
		}
		b[k] = byte('A' + i)
	}
	return string(b)
}
