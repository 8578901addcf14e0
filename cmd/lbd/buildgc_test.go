package main

import (
	"runtime/debug"
	"testing"
)

// TestRaiseGCForLoad checks the start's collector target is set and put
// back, and left alone when GOGC is set.
func TestRaiseGCForLoad(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	cases := []struct {
		name, gogc string
		during     int
	}{
		{"default", "", loadGCPercent},
		{"GOGC set", "50", 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			restore := raiseGCForLoad()
			during := debug.SetGCPercent(100)
			debug.SetGCPercent(during)
			restore()
			restore()
			after := debug.SetGCPercent(100)
			if during != tc.during || after != 100 {
				t.Errorf("GC percent %d during the load, %d after; want %d, 100", during, after, tc.during)
			}
		})
	}
}
