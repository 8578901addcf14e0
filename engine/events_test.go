package engine

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
)

// The timeline learns of down and up from the backends' own log calls:
// if backend.SetAlive's wording changes, these events stop and this
// test says so.
func TestBackendEventsRecorded(t *testing.T) {
	ev := &adminapi.Events{}
	g, err := build(cfgWith(t, "1", ""), nil, logrus.StandardLogger(), nil, buildOptions{events: ev})
	if err != nil {
		t.Fatal(err)
	}
	b := g.backends[firstKey(g)]
	steps := []struct {
		alive  bool
		reason string
		want   adminapi.Event
	}{
		{false, "probe: connection refused", adminapi.Event{Kind: adminapi.EventDown, Detail: "probe: connection refused"}},
		{false, "again", adminapi.Event{}}, // no flip, no event
		{true, "", adminapi.Event{Kind: adminapi.EventUp}},
	}
	var seq uint64
	for i, s := range steps {
		b.SetAlive(s.alive, s.reason)
		got := ev.Since(seq)
		if s.want.Kind == "" {
			if len(got) != 0 {
				t.Errorf("step %d: no flip recorded %+v", i, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Kind != s.want.Kind || got[0].Detail != s.want.Detail ||
			got[0].Object != "backend "+b.Address() {
			t.Fatalf("step %d: recorded %+v, want %+v on backend %s", i, got, s.want, b.Address())
		}
		seq = got[0].Seq
	}
}

// firstKey is a key of g's backends.
func firstKey(g *graph) string {
	for k := range g.backends {
		return k
	}
	return ""
}

// freePortCfg is twoBackends on a port free now: a reload binds it, and
// other tests use twoBackends' own port.
func freePortCfg(t *testing.T) *config.Config {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return load(t, strings.Replace(strings.Replace(twoBackends, "PRIO", "1", 1), "18080", strconv.Itoa(port), 1))
}

// A reload, good or bad, is on the timeline with its result.
func TestReloadEventsRecorded(t *testing.T) {
	tests := []struct {
		name   string
		load   func() (*config.Config, error)
		detail string
	}{
		{"success", func() (*config.Config, error) { return freePortCfg(t), nil }, "configuration reloaded"},
		{"failure", func() (*config.Config, error) { return nil, errors.New("line 3: unknown directive") },
			"failed, the running configuration stays: line 3: unknown directive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(freePortCfg(t), Options{Load: tc.load, Log: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			// Its error is the event's detail, checked below.
			_ = e.Reload()
			got := e.Observer().Events.Since(0)
			if len(got) == 0 || got[0].Kind != adminapi.EventReload || !strings.HasPrefix(got[0].Detail, tc.detail) {
				t.Errorf("timeline %+v, want a reload %q", got, tc.detail)
			}
		})
	}
}
