package backend

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// manualProber returns a started Prober whose rounds run only when the test
// calls the returned tick function, which returns once the round it
// triggered has launched its probes.
func manualProber(t *testing.T, cfg ProberConfig, bs ...*Backend) (*Prober, func()) {
	t.Helper()
	ch := make(chan time.Time)
	done := make(chan struct{})
	p := NewProber(cfg)
	p.ticks = ch
	p.onRound = func() { done <- struct{}{} }
	p.Add(bs...)
	p.Start(context.Background())
	t.Cleanup(p.Stop)
	tick := func() {
		ch <- time.Time{}
		<-done
	}
	return p, tick
}

// idle waits until no probe of b is in flight.
func idle(t *testing.T, b *Backend) {
	t.Helper()
	waitFor(t, "the probe to finish", func() bool { return !b.probing.Load() })
}

// TestProberKillRestart is the end-to-end story with real sockets: the
// backend goes away, a dial marks it dead, it comes back and is resurrected
// by the first round after that.
func TestProberKillRestart(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	lg, buf := testLogger()
	b := New(Options{Address: addr, ConnTO: 2 * time.Second, Logger: lg})
	ln.Close()
	if _, err := b.Dial(time.Time{}); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	if b.Alive() || buf.count("Backend "+addr+" dead (") != 1 {
		t.Fatalf("not marked dead on dial failure; log:\n%s", buf)
	}
	_, tick := manualProber(t, ProberConfig{Interval: time.Hour}, b)
	idle(t, b) // Start probes dead backends at once; the port is still closed
	if b.Alive() {
		t.Fatal("resurrected while the port is closed")
	}
	listen(t, addr)
	tick()
	idle(t, b)
	if !b.Alive() || buf.count("Backend "+addr+" resurrected") != 1 {
		t.Fatalf("not resurrected after one round; log:\n%s", buf)
	}
	if b.ConnectTime() < 0 {
		t.Error("the probe did not sample ConnectTime")
	}
}

// TestProberRealTicker runs the real ticker with a short Alive interval and
// waits (without a timing assertion) for the resurrection.
func TestProberRealTicker(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ln := listen(t, "127.0.0.1:0")
	lg, _ := testLogger()
	b := New(Options{Address: ln.Addr().String(), Logger: lg})
	b.SetAlive(false, "test")
	p := NewProber(ProberConfig{Interval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.Start(ctx)
	p.Start(ctx) // second Start is a no-op
	defer p.Stop()
	p.Add(b)
	waitFor(t, "resurrection", b.Alive)
	b.SetAlive(false, "again")
	waitFor(t, "second resurrection by the ticker", b.Alive)
}

// blockingDialer counts dials and how many are in flight at once.
type blockingDialer struct {
	release          chan struct{}
	calls, now, peak atomic.Int32
}

func (d *blockingDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	d.calls.Add(1)
	n := d.now.Add(1)
	defer d.now.Add(-1)
	for {
		p := d.peak.Load()
		if n <= p || d.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-d.release:
		c, s := net.Pipe()
		s.Close()
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestProberOneProbeInFlight(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	d := &blockingDialer{release: make(chan struct{})}
	lg, _ := testLogger()
	b := New(Options{Address: "10.0.0.1:80", Logger: lg, DialContext: d.dial})
	b.SetAlive(false, "test")
	p, tick := manualProber(t, ProberConfig{Interval: time.Hour, CheckAlive: true}, b)
	waitFor(t, "the first probe to start", func() bool { return d.now.Load() == 1 })
	other := NewProber(ProberConfig{})
	other.Add(b)
	other.Start(context.Background())
	defer other.Stop()
	for range 5 {
		if p.Check(b) || other.Check(b) {
			t.Fatal("Check started a second probe while one is in flight")
		}
		tick()
	}
	if d.calls.Load() != 1 || b.Alive() {
		t.Fatalf("dials %d alive %v while the probe is blocked", d.calls.Load(), b.Alive())
	}
	close(d.release)
	idle(t, b)
	if !b.Alive() || d.peak.Load() != 1 {
		t.Errorf("alive %v peak in-flight %d, want true 1", b.Alive(), d.peak.Load())
	}
	if !p.Check(b) {
		t.Error("Check refused although no probe is in flight")
	}
	idle(t, b)
}

func TestProberWhoIsProbed(t *testing.T) {
	t.Parallel()
	refused := errors.New("connection refused")
	tests := []struct {
		name       string
		o          Options
		checkAlive bool
		dead       bool
		upAddrs    []string // probe targets that answer
		wantAlive  bool
		wantDials  []string
	}{
		{name: "dead and answering: resurrected", dead: true, upAddrs: []string{"10.0.0.1:80"},
			wantAlive: true, wantDials: []string{"10.0.0.1:80"}},
		{name: "dead and silent: stays dead", dead: true, wantDials: []string{"10.0.0.1:80"}},
		{name: "alive, no HAport: not probed (Pound)", wantAlive: true},
		{name: "alive, CheckAlive, silent: killed (zproxy)", checkAlive: true, wantDials: []string{"10.0.0.1:80"}},
		{name: "alive, HAport silent: killed (classic Pound)", o: Options{HAPort: "8081"},
			upAddrs: []string{"10.0.0.1:80"}, wantDials: []string{"10.0.0.1:8081"}},
		{name: "dead, HAport answers: resurrected via HAport", o: Options{HAPort: "8081"}, dead: true,
			upAddrs: []string{"10.0.0.1:8081"}, wantAlive: true, wantDials: []string{"10.0.0.1:8081"}},
		{name: "disabled and dead: never probed", o: Options{Disabled: true}, dead: true,
			upAddrs: []string{"10.0.0.1:80"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var dials []string
			o := tc.o
			o.Address = "10.0.0.1:80"
			o.Logger, _ = testLogger()
			o.DialContext = func(_ context.Context, _, addr string) (net.Conn, error) {
				mu.Lock()
				dials = append(dials, addr)
				mu.Unlock()
				for _, up := range tc.upAddrs {
					if up == addr {
						c, s := net.Pipe()
						s.Close()
						return c, nil
					}
				}
				return nil, refused
			}
			b := New(o)
			if tc.dead {
				b.SetAlive(false, "test")
			}
			cfg := ProberConfig{Interval: time.Hour, CheckAlive: tc.checkAlive}
			p, tick := manualProber(t, cfg)
			p.Add(b) // Add probes a dead backend at once
			idle(t, b)
			if !tc.dead {
				tick() // live ones wait for the round
				idle(t, b)
			}
			mu.Lock()
			got := strings.Join(dials, ",")
			mu.Unlock()
			if b.Alive() != tc.wantAlive || got != strings.Join(tc.wantDials, ",") {
				t.Errorf("alive %v dials [%s], want %v [%s]", b.Alive(), got, tc.wantAlive, strings.Join(tc.wantDials, ","))
			}
		})
	}
}

func TestProberStopCancelsProbes(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	d := &blockingDialer{release: make(chan struct{})}
	lg, _ := testLogger()
	b := New(Options{Address: "10.0.0.1:80", Logger: lg, DialContext: d.dial, ConnTO: time.Hour})
	b.SetAlive(false, "test")
	p := NewProber(ProberConfig{})
	if p.Check(b) {
		t.Fatal("Check before Start started a probe")
	}
	p.Add(b)
	p.Start(context.Background())
	waitFor(t, "the probe to start", func() bool { return d.now.Load() == 1 })
	p.Stop()
	p.Stop() // idempotent
	if d.now.Load() != 0 || b.Alive() || b.probing.Load() {
		t.Errorf("after Stop: in flight %d alive %v probing %v", d.now.Load(), b.Alive(), b.probing.Load())
	}
	p.Start(context.Background()) // a stopped prober stays stopped
	if p.Check(b) {
		t.Error("a stopped prober started a probe")
	}
}

func TestProberRemoveAndReap(t *testing.T) {
	t.Parallel()
	kept := pipeBackend(t, Options{Address: "10.0.0.1:80"})
	gone := pipeBackend(t, Options{Address: "10.0.0.2:80", IdleTimeout: time.Minute})
	c, _ := gone.Dial(time.Time{})
	gone.Put(c)
	kc, _ := kept.Dial(time.Time{})
	kept.Put(kc)
	kc.idleSince.Store(monoNow() - int64(time.Hour))
	p, tick := manualProber(t, ProberConfig{Interval: time.Hour}, kept, gone)
	p.Remove(gone)
	gone.SetAlive(false, "test")
	tick()
	if kept.Idle() != 0 {
		t.Error("the round did not reap the expired idle conn")
	}
	if gone.Alive() || gone.probing.Load() {
		t.Error("a removed backend was probed")
	}
}

// TestProberFirstRound: FirstRound stays open while a probe of Start's
// round is in flight and closes when it has ended (with the result
// applied); with nothing to probe it closes at once.
func TestProberFirstRound(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	lg, _ := testLogger()
	d := &blockingDialer{release: make(chan struct{})}
	dead := New(Options{Address: "10.0.0.1:80", Logger: lg, DialContext: d.dial})
	dead.SetAlive(false, "test")
	p := NewProber(ProberConfig{Interval: time.Hour})
	p.Add(dead)
	p.Start(context.Background())
	defer p.Stop()
	waitFor(t, "the first probe to start", func() bool { return d.now.Load() == 1 })
	select {
	case <-p.FirstRound():
		t.Fatal("FirstRound closed while its probe is in flight")
	default:
	}
	close(d.release)
	select {
	case <-p.FirstRound():
	case <-time.After(5 * time.Second):
		t.Fatal("FirstRound did not close after its probe ended")
	}
	if !dead.Alive() {
		t.Error("FirstRound closed before the probe's result was applied")
	}

	empty := NewProber(ProberConfig{Interval: time.Hour})
	empty.Add(New(Options{Address: "10.0.0.2:80", Logger: lg})) // alive: Pound probes only the dead
	empty.Start(context.Background())
	defer empty.Stop()
	select {
	case <-empty.FirstRound():
	case <-time.After(5 * time.Second):
		t.Fatal("FirstRound of a round without probes did not close")
	}
}
