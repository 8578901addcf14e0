package session

import (
	"testing"
	"time"
)

func TestTableHotPathAllocs(t *testing.T) {
	c := newFakeClock()
	tb := NewTable[*fakeBackend](time.Minute, 0, c.Now)
	b := newFakeBackend("b1")
	key := []byte("4-7f000001-46a10000")
	tb.Store(key, b)
	missing := []byte("no-such-session")
	pick := func() (*fakeBackend, bool) { return b, true }
	tests := []struct {
		name string
		fn   func()
	}{
		{name: "lookup hit", fn: func() { tb.Lookup(key) }},
		{name: "lookup miss", fn: func() { tb.Lookup(missing) }},
		{name: "store re-point", fn: func() { tb.Store(key, b) }},
		{name: "resolve hit", fn: func() { tb.Resolve(key, usable, pick) }},
		{name: "resolve without key", fn: func() { tb.Resolve(nil, usable, pick) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tt.fn); allocs != 0 {
				t.Fatalf("%s: %v allocs per call, want 0", tt.name, allocs)
			}
		})
	}
	if v, ok := tb.Lookup(key); !ok || v != b {
		t.Fatal("session lost during the alloc runs")
	}
}
