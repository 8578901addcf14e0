package backend

import (
	"context"
	"errors"
	"net"
	"testing"
)

// TestProbeCounts: a probe that connects counts as passed, one that fails
// as failed, and one whose caller stopped first not at all; every counted
// probe is in the duration histogram.
func TestProbeCounts(t *testing.T) {
	refused := errors.New("connection refused")
	tests := []struct {
		name           string
		dial           DialFunc
		cancelFirst    bool
		passed, failed uint64
	}{
		{name: "passes", dial: func(context.Context, string, string) (net.Conn, error) {
			c, s := net.Pipe()
			s.Close()
			return c, nil
		}, passed: 1},
		{name: "fails", dial: func(context.Context, string, string) (net.Conn, error) { return nil, refused }, failed: 1},
		{name: "stopped mid-probe", dial: func(ctx context.Context, _, _ string) (net.Conn, error) { return nil, ctx.Err() }, cancelFirst: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Options{Address: "127.0.0.1:1", DialContext: tc.dial})
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancelFirst {
				cancel()
			}
			defer cancel()
			err := b.Probe(ctx) // its error is what the counters must say
			passed, failed := b.Probes()
			if passed != tc.passed || failed != tc.failed {
				t.Errorf("passed %d failed %d (err %v), want %d and %d", passed, failed, err, tc.passed, tc.failed)
			}
			if n := b.ProbeDurations().Count; n != tc.passed+tc.failed {
				t.Errorf("duration histogram counts %d probes, want %d", n, tc.passed+tc.failed)
			}
		})
	}
}
