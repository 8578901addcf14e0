package adminapi

import (
	"context"
	"net/http/httptest"
	"testing"
)

func TestEventsSince(t *testing.T) {
	tests := []struct {
		name  string
		add   int    // events added, numbered 1..add
		since uint64 // asked after
		want  []uint64
	}{
		{"empty", 0, 0, nil},
		{"all, newest first", 3, 0, []uint64{3, 2, 1}},
		{"after the last seen", 3, 1, []uint64{3, 2}},
		{"nothing new", 3, 3, nil},
		{"ahead of the ring", 3, 9, nil},
		{"wrapped: the oldest fell off", EventsCap + 2, 0, seqs(EventsCap+2, 3)},
		{"wrapped, after a recent one", EventsCap + 2, EventsCap, []uint64{EventsCap + 2, EventsCap + 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e Events
			for i := 0; i < tc.add; i++ {
				e.Add(Event{Kind: EventReload})
			}
			got := e.Since(tc.since)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d events, want %d", len(got), len(tc.want))
			}
			for i, ev := range got {
				if ev.Seq != tc.want[i] || ev.TimeMS == 0 || ev.Kind != EventReload {
					t.Errorf("event %d = %+v, want seq %d stamped", i, ev, tc.want[i])
				}
			}
		})
	}
}

// seqs is hi, hi-1, ..., lo.
func seqs(hi, lo uint64) []uint64 {
	var out []uint64
	for s := hi; s >= lo; s-- {
		out = append(out, s)
	}
	return out
}

func TestEventsNil(t *testing.T) {
	var e *Events
	e.Add(Event{Kind: EventUp}) // must not panic: "no timeline kept"
	if got := e.Since(0); got != nil {
		t.Errorf("a nil timeline lists %v", got)
	}
}

func TestWho(t *testing.T) {
	r := httptest.NewRequest("POST", "/api/enable", nil)
	r.RemoteAddr = "127.0.0.1:5555"
	if got := who(r); got != "client 127.0.0.1:5555" {
		t.Errorf("who over TCP = %q", got)
	}
	r = r.WithContext(context.WithValue(r.Context(), peerKey{}, PeerCred{PID: 42, UID: 1000, GID: 1000, Known: true}))
	if got := who(r); got != "uid 1000 pid 42" {
		t.Errorf("who on the socket = %q", got)
	}
}
