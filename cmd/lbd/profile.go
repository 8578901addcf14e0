package main

import (
	"os"
	"runtime/pprof"

	"github.com/sirupsen/logrus"
)

// startProfile writes a CPU profile to $LBD_CPUPROFILE until lbd exits, so
// a benchmark run can be explained with `go tool pprof`. It returns nil
// when profiling is not asked for.
func startProfile(log *logrus.Logger) func() {
	path := os.Getenv("LBD_CPUPROFILE")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		log.Warnf("LBD_CPUPROFILE: %v", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Warnf("LBD_CPUPROFILE: %v", err)
		f.Close() // nothing was written
		return nil
	}
	return func() {
		pprof.StopCPUProfile()
		// A failed close can lose the profile's tail: say so.
		if err := f.Close(); err != nil {
			log.Warnf("LBD_CPUPROFILE: %v", err)
		}
	}
}
