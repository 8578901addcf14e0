package lbctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// coreCommand is poundctl's core: version, pid, clock and worker pool of
// the server.
func (r *runner) coreCommand() *cli.Command {
	return &cli.Command{
		Name:  "core",
		Usage: "show the server's version, pid, time and worker pool (Pound socket only)",
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0); err != nil {
				return err
			}
			reply, err := r.core()
			if err != nil {
				return err
			}
			return r.printReply(reply)
		},
	}
}

// core fetches GET /core, or reuses the reply dialect detection got.
func (r *runner) core() ([]byte, error) {
	cn, err := r.connect()
	if err != nil {
		return nil, err
	}
	if err := cn.needPound("core"); err != nil {
		return nil, err
	}
	if cn.coreReply != nil {
		return cn.coreReply, nil
	}
	return cn.get("/core")
}

// versionCommand prints lbctl's version and the server's. With no socket
// configured at all it prints lbctl's alone and succeeds, so it can be
// used on a host where lbd is not running.
func (r *runner) versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the versions of lbctl and of the server",
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0); err != nil {
				return err
			}
			fmt.Fprintf(r.env.Stdout, "%s: %s\n", r.prog, Version)
			if !r.socketConfigured() {
				return nil
			}
			cn, err := r.connect()
			if err != nil {
				return err
			}
			if cn.dialect != dialectPound {
				fmt.Fprintf(r.env.Stdout, "server: zproxy dialect on %s (the zproxy API does not report a version)\n", cn.target)
				return nil
			}
			reply, err := r.core()
			if err != nil {
				return err
			}
			var core struct {
				Version string `json:"version"`
				PID     int    `json:"pid"`
			}
			if err := json.Unmarshal(reply, &core); err != nil || core.Version == "" {
				return errors.New("unexpected reply to GET /core")
			}
			fmt.Fprintf(r.env.Stdout, "server: %s (pid %d) on %s\n", core.Version, core.PID, cn.target)
			return nil
		},
	}
}

// socketConfigured reports whether any source names a control socket. A
// broken ~/.poundctl or an unknown -S counts, so that connect reports it.
func (r *runner) socketConfigured() bool {
	if r.opt.socket != "" || r.opt.config != "" || r.env.Getenv("LBCTL_SOCKET") != "" {
		return true
	}
	if srv, err := r.server(); err != nil || srv.url != "" {
		return true
	}
	_, err := os.Stat(r.env.DefaultConfig)
	return err == nil
}
