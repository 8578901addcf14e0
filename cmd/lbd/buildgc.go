package main

import (
	"os"
	"runtime/debug"
)

// loadGCPercent is the collector's target while lbd reads its
// configuration and builds the engine at start. Nearly everything
// allocated then is either kept or thrown away at once (the parse tree),
// and with the default 100 the heap, growing from nothing, was marked
// again and again: at 10,000 services / 20,000 backends ~15 % of the
// start's CPU (issue 36). The garbage is returned once lbd has started
// (engine.ReturnBuildGarbage).
const loadGCPercent = 400

// raiseGCForLoad sets loadGCPercent unless GOGC says what the operator
// wants, and returns what puts the setting back (safe to call twice).
func raiseGCForLoad() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(loadGCPercent)
	done := false
	return func() {
		if !done {
			done = true
			debug.SetGCPercent(prev)
		}
	}
}
