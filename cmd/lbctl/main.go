// Command lbctl steers a running lbd through its control socket (lbctl(8)).
package main

import (
	"lbd/lbctl"
	"os"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

func main() {
	lbctl.Version = Version
	os.Exit(lbctl.Main(os.Args, lbctl.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, LookupEnv: os.LookupEnv}))
}
