package lbctl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"
)

// upgradeTimeout is how long lbctl waits for an upgrade's answer unless
// -timeout says otherwise: lbd gives the new process 25 s to get ready.
const upgradeTimeout = 40 * time.Second

// upgradeCommand replaces the running lbd with the binary now installed
// at its path, without dropping a connection (PATCH /upgrade).
func (r *runner) upgradeCommand() *cli.Command {
	return &cli.Command{
		Name:  "upgrade",
		Usage: "start the installed lbd binary, hand it the sockets and the runtime state, and let the running one drain",
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0); err != nil {
				return err
			}
			if !c.IsSet("timeout") && r.opt.timeout < upgradeTimeout {
				r.opt.timeout = upgradeTimeout
			}
			cn, err := r.connect()
			if err != nil {
				return err
			}
			reply, err := cn.do(http.MethodPatch, "/upgrade", nil)
			if err != nil {
				return err
			}
			if r.opt.json {
				return r.printJSON(reply)
			}
			var res struct {
				PID      int `json:"pid"`
				Previous int `json:"previous"`
			}
			if err := json.Unmarshal(reply, &res); err != nil {
				return fmt.Errorf("upgrade: unexpected reply %q: %w", reply, err)
			}
			if !r.opt.quiet {
				fmt.Fprintf(r.env.Stdout, "pid %d serves; pid %d is draining\n", res.PID, res.Previous)
			}
			return nil
		},
	}
}
