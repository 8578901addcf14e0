package lbctl

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/urfave/cli/v2"

	"lbd/explain"
)

// routeCommand is the routing explainer: it asks the running lbd which
// listener, service and backend a request would get, and why (POST
// /route, on either socket). Nothing changes on the server: it is a dry
// run.
func (r *runner) routeCommand() *cli.Command {
	return &cli.Command{
		Name:      "route",
		Usage:     "explain which listener, service and backend a request would get, and why (a dry run)",
		ArgsUsage: "METHOD URL",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "H", Usage: "add the request header `'Name: value'` (repeatable)"},
			&cli.StringFlag{Name: "a", Usage: "the client's `ADDRESS` (default 127.0.0.1)"},
			&cli.StringFlag{Name: "l", Usage: "the `LISTENER`, numbered as lbctl list prints it, or its name (default: the one the URL reaches)"},
			&cli.BoolFlag{Name: "j", Usage: "print the JSON explanation", Destination: &r.opt.json},
		},
		Action: func(c *cli.Context) error {
			a, err := args(c, 2, 2)
			if err != nil {
				return err
			}
			q := explain.Query{Method: a[0], URL: a[1], Headers: c.StringSlice("H"), Client: c.String("a"), Listener: c.String("l")}
			return r.route(q)
		},
	}
}

// route sends the query and prints the explanation.
func (r *runner) route(q explain.Query) error {
	cn, err := r.connect()
	if err != nil {
		return err
	}
	reply, err := cn.do(http.MethodPost, "/route", q)
	if err != nil {
		return fmt.Errorf("route: %w", err)
	}
	if r.opt.json {
		return r.printJSON(reply)
	}
	var route explain.Route
	if err := json.Unmarshal(reply, &route); err != nil {
		return fmt.Errorf("unexpected reply: %w", err)
	}
	return explain.Write(r.env.Stdout, &route)
}
