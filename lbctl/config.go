package lbctl

import (
	"errors"
	"net/http"

	"lbd/adminapi/client"

	"github.com/urfave/cli/v2"
)

// reloadCommand re-reads the configuration file of the running lbd.
func (r *runner) reloadCommand() *cli.Command {
	return &cli.Command{
		Name:  "reload",
		Usage: "re-read the configuration file; on error the running configuration stays",
		Action: func(c *cli.Context) error {
			cn, err := r.connectNoArgs(c)
			if err != nil {
				return err
			}
			reply, err := cn.do(http.MethodPatch, "/config", nil)
			if err != nil {
				return reloadError(cn, err)
			}
			if r.opt.json {
				return r.printJSON(reply)
			}
			return nil
		},
	}
}

// reloadError explains a Pound socket without the reload endpoint: lbd
// serves PATCH /config in both dialects, so a 405 means an older server.
func reloadError(cn *conn, err error) error {
	var se *client.StatusError
	if cn.dialect == dialectPound && errors.As(err, &se) && se.Status == http.StatusMethodNotAllowed {
		return errors.New("reload: this server's control socket has no reload endpoint (PATCH /config); send lbd SIGUSR1 instead")
	}
	return err
}
