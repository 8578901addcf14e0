package main

import (
	"os"

	"lbd/proxy"
	"lbd/uring"
)

// PROTOTYPE switch (issue 20): LBD_URING=1 serves plain HTTP listeners
// through the io_uring completion loop when the kernel allows it.
func init() {
	if os.Getenv("LBD_URING") == "1" && uring.Probe() == nil {
		proxy.RingServe = uring.Serve
	}
}
