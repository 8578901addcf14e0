package lbctl

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/urfave/cli/v2"
)

// backendCommand groups the backend verbs. Enabling and disabling a
// backend are the top-level enable and disable, as in poundctl.
func (r *runner) backendCommand() *cli.Command {
	return &cli.Command{
		Name:  "backend",
		Usage: "add backends at runtime",
		Subcommands: []*cli.Command{{
			Name:      "add",
			Usage:     "add a backend to service /L/S (zproxy socket only; not written to the configuration)",
			ArgsUsage: "/L/S ADDRESS:PORT",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "id", Usage: "backend `ID`", DefaultText: "ADDRESS-PORT"},
				&cli.IntFlag{Name: "weight", Usage: "balancing `WEIGHT`", Value: 1},
				&cli.IntFlag{Name: "priority", Usage: "`PRIORITY` 1-9", Value: 1},
				&cli.IntFlag{Name: "connlimit", Usage: "maximum concurrent connections, 0 = no `LIMIT`"},
				&cli.BoolFlag{Name: "https", Usage: "talk TLS to the backend"},
			},
			Action: r.addBackend,
		}},
	}
}

// addBackend is zproxy's PUT /listener/L/service/S/backends. Like zproxy,
// lbd applies the addition at once and drops it at the next reload. The
// Pound dialect has no such endpoint.
func (r *runner) addBackend(c *cli.Context) error {
	a, err := args(c, 2, 2)
	if err != nil {
		return err
	}
	p, err := parsePath(a[0])
	if err == nil {
		err = p.need(levelService, levelService)
	}
	if err != nil {
		return err
	}
	body, err := backendBody(c, a[1])
	if err != nil {
		return err
	}
	cn, err := r.connect()
	if err != nil {
		return err
	}
	if cn.dialect != dialectZproxy {
		return errors.New("backend add: the Pound control API cannot add backends; use the zproxy control socket (lbd -C SOCKET)")
	}
	u, err := p.zproxy()
	if err != nil {
		return err
	}
	reply, err := cn.do(http.MethodPut, u+"/backends", body)
	if err != nil {
		return err
	}
	if r.opt.json {
		return r.printJSON(reply)
	}
	return nil
}

// backendBody builds the JSON body from ADDRESS:PORT and the flags that
// were given; the server applies zproxy's defaults to the rest.
func backendBody(c *cli.Context, hostport string) (map[string]any, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("bad backend address %q: want ADDRESS:PORT", hostport)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("bad backend port %q", portText)
	}
	body := map[string]any{"address": host, "port": port}
	if c.IsSet("id") {
		body["id"] = c.String("id")
	}
	for _, name := range []string{"weight", "priority", "connlimit"} {
		if c.IsSet(name) {
			body[name] = c.Int(name)
		}
	}
	if c.IsSet("https") {
		body["https"] = c.Bool("https")
	}
	return body, nil
}
