package main

import (
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/sirupsen/logrus"
)

// startProfile writes a CPU profile to $LBD_CPUPROFILE and an execution
// trace (scheduler latency, GC, system calls) to $LBD_TRACE until lbd
// exits, so a benchmark run can be explained with `go tool pprof` and
// `go tool trace`. It returns nil when neither is asked for.
func startProfile(log *logrus.Logger) func() {
	var stops []func()
	if f := create(log, "LBD_CPUPROFILE"); f != nil {
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Warnf("LBD_CPUPROFILE: %v", err)
			f.Close() // nothing was written
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); closeLog(log, "LBD_CPUPROFILE", f) })
		}
	}
	if f := create(log, "LBD_TRACE"); f != nil {
		if err := trace.Start(f); err != nil {
			log.Warnf("LBD_TRACE: %v", err)
			f.Close() // nothing was written
		} else {
			stops = append(stops, func() { trace.Stop(); closeLog(log, "LBD_TRACE", f) })
		}
	}
	if len(stops) == 0 {
		return nil
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// create opens the file the environment variable names ("" = none).
func create(log *logrus.Logger, env string) *os.File {
	path := os.Getenv(env)
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		log.Warnf("%s: %v", env, err)
		return nil
	}
	return f
}

// closeLog closes f: a failed close can lose the file's tail, so say so.
func closeLog(log *logrus.Logger, env string, f *os.File) {
	if err := f.Close(); err != nil {
		log.Warnf("%s: %v", env, err)
	}
}
