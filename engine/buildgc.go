package engine

import (
	"os"
	"runtime/debug"
	"sync"
)

// BuildGCPercent is the collector's target while a configuration loads
// and the engine builds it, at start and at each reload. Nearly all that
// is allocated then is either kept or thrown away at once (the parse
// tree, the build's scratch), and with the default 100 the heap was
// marked over and over while it grew: at 10,000 services / 20,000
// backends ~15 % of the start's CPU (issue 36). Higher is not better: a
// heap that grows further before it is collected faults in more fresh
// pages, which cost this much again (starts with GOGC 150, 200, 300 and
// 400: median CPU 570, 505, 610 and 580 ms). ReturnBuildGarbage gives
// the garbage back afterwards.
const BuildGCPercent = 200

// buildGC counts the builds under way, which may overlap (a reload
// requested by signal and one by the control socket), so that the last
// one to end puts the setting back.
var buildGC struct {
	mu   sync.Mutex
	n    int
	prev int
}

// RaiseGCForBuild sets BuildGCPercent, unless GOGC says what the
// operator wants, and returns what puts the setting back (once, however
// often it is called).
func RaiseGCForBuild() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	buildGC.mu.Lock()
	if buildGC.n == 0 {
		buildGC.prev = debug.SetGCPercent(BuildGCPercent)
	}
	buildGC.n++
	buildGC.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			buildGC.mu.Lock()
			defer buildGC.mu.Unlock()
			if buildGC.n--; buildGC.n == 0 {
				debug.SetGCPercent(buildGC.prev)
			}
		})
	}
}
