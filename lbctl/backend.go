package lbctl

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/urfave/cli/v2"

	"lbd/adminapi/client"
)

// backendCommand groups the backend verbs. Enabling and disabling a
// backend are the top-level enable and disable, as in poundctl; weight
// and priority are also top-level commands.
func (r *runner) backendCommand() *cli.Command {
	return &cli.Command{
		Name:  "backend",
		Usage: "add, re-weight and remove backends at runtime",
		Subcommands: []*cli.Command{
			r.settingCommand("weight", "set the balancing weight of backend B (Priority under Pound's random and iwrr, 0-65535; Weight under a RoutingPolicy, from 1)"),
			r.settingCommand("priority", "set the Priority of backend B (Pound's weight, 0-65535; zproxy's tier 1-9 under a RoutingPolicy)"),
			r.settingCommand("connlimit", "set the connection limit of backend B (0 = none)"),
			r.removeCommand(),
			{
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

// settingCommand is backend weight, priority or connlimit (and the
// top-level weight and priority): PATCH of the backend, then its row.
func (r *runner) settingCommand(name, usage string) *cli.Command {
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "/L/S/B N",
		Action:    func(c *cli.Context) error { return r.setBackend(c, name) },
	}
}

// removeCommand is backend remove (alias rm).
func (r *runner) removeCommand() *cli.Command {
	return &cli.Command{
		Name:      "remove",
		Aliases:   []string{"rm"},
		Usage:     "remove backend B from its service (until the next reload): its sessions go, requests in flight finish",
		ArgsUsage: "/L/S/B",
		Action:    r.removeBackend,
	}
}

// weightCommand and priorityCommand are the top-level forms.
func (r *runner) weightCommand() *cli.Command {
	return r.settingCommand("weight", "set the balancing weight of backend B (short for backend weight)")
}

func (r *runner) priorityCommand() *cli.Command {
	return r.settingCommand("priority", "set the Priority of backend B (short for backend priority)")
}

// backendPath parses the /L/S/B argument of a backend verb.
func backendPath(arg string) (objPath, error) {
	p, err := parsePath(arg)
	if err == nil {
		err = p.need(levelBackend, levelBackend)
	}
	return p, err
}

// setBackend is PATCH /listener/L/S/B?NAME=N (Pound) or PATCH
// .../backend/B {"NAME":N} (zproxy), both lbd extensions; then it shows
// the backend.
func (r *runner) setBackend(c *cli.Context, name string) error {
	a, err := args(c, 2, 2)
	if err != nil {
		return err
	}
	p, err := backendPath(a[0])
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(a[1])
	if err != nil {
		return fmt.Errorf("bad %s %q: want a number", name, a[1])
	}
	cn, err := r.connect()
	if err != nil {
		return err
	}
	if cn.dialect == dialectPound {
		reply, err := cn.do(http.MethodPatch, "/listener"+p.pound()+"?"+name+"="+strconv.Itoa(n), nil)
		if err != nil {
			return extensionError(err)
		}
		return r.printChanged(cn, p, reply)
	}
	u, err := p.zproxy()
	if err != nil {
		return err
	}
	reply, err := cn.do(http.MethodPatch, u, map[string]int{name: n})
	if err != nil {
		return extensionError(err)
	}
	if r.opt.json {
		return r.printJSON(reply)
	}
	return r.printChanged(cn, p, nil)
}

// removeBackend is DELETE /backend/L/S/B (Pound) or DELETE
// .../backend/B (zproxy), both lbd extensions; then it shows the
// service.
func (r *runner) removeBackend(c *cli.Context) error {
	a, err := args(c, 1, 1)
	if err != nil {
		return err
	}
	p, err := backendPath(a[0])
	if err != nil {
		return err
	}
	svc := objPath{segs: p.segs[:levelService]}
	cn, err := r.connect()
	if err != nil {
		return err
	}
	if cn.dialect == dialectPound {
		reply, err := cn.do(http.MethodDelete, "/backend"+p.pound(), nil)
		if err != nil {
			return extensionError(err)
		}
		return r.printChanged(cn, svc, reply)
	}
	u, err := p.zproxy()
	if err != nil {
		return err
	}
	reply, err := cn.do(http.MethodDelete, u, nil)
	if err != nil {
		return extensionError(err)
	}
	if r.opt.json {
		return r.printJSON(reply)
	}
	return r.printChanged(cn, svc, nil)
}

// extensionError explains the answer of a server without lbd's backend
// endpoints: Pound's 405 page, zproxy's bare 400.
func extensionError(err error) error {
	var se *client.StatusError
	if errors.As(err, &se) && (se.Status == http.StatusMethodNotAllowed ||
		se.Status == http.StatusBadRequest && len(bytes.TrimSpace(se.Body)) == 0) {
		return fmt.Errorf("%w (this server cannot change or remove backends: it is not lbd, or an older one)", err)
	}
	return err
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
