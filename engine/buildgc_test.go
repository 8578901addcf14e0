package engine

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestRaiseGCForBuild checks the build's collector target is set and
// put back, by the last of overlapping builds, once per restore however
// often it is called, and left alone when GOGC is set.
func TestRaiseGCForBuild(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Run("default", func(t *testing.T) {
		t.Setenv("GOGC", "")
		a := RaiseGCForBuild()
		b := RaiseGCForBuild()
		if p := gcPercent(); p != BuildGCPercent {
			t.Fatalf("during two builds: %d, want %d", p, BuildGCPercent)
		}
		a()
		a()
		if p := gcPercent(); p != BuildGCPercent {
			t.Errorf("one build still under way: %d, want %d", p, BuildGCPercent)
		}
		b()
		if p := gcPercent(); p != 100 {
			t.Errorf("after the builds: %d, want 100", p)
		}
	})
	t.Run("GOGC set", func(t *testing.T) {
		t.Setenv("GOGC", "50")
		restore := RaiseGCForBuild()
		if p := gcPercent(); p != 100 {
			t.Errorf("during the build: %d, want 100 (GOGC is the operator's)", p)
		}
		restore()
	})
}
