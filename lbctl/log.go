package lbctl

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/urfave/cli/v2"
)

// logCommand is poundctl's log: show, set or clear the request log format
// of the whole server (/) or of one listener (/L).
func (r *runner) logCommand() *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "show, set (FORMAT) or clear (-d) the request log format, globally or of listener L",
		ArgsUsage: "[/[L]] [FORMAT]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "d", Usage: "clear the listener's own format (the global one becomes null)"},
		},
		Action: r.logAction,
	}
}

// logAction maps the forms to Pound's endpoints: GET /log[/L], PUT
// /log/[L]?level=FORMAT and DELETE /log[/L]. The reply is the log object.
func (r *runner) logAction(c *cli.Context) error {
	a, err := args(c, 0, 2)
	if err != nil {
		return err
	}
	p, err := parsePath(first(a))
	if err == nil {
		err = p.need(levelAll, levelListener)
	}
	if err != nil {
		return err
	}
	method, target := http.MethodGet, "/log"+p.pound()
	switch {
	case c.Bool("d") && len(a) > 1:
		return errors.New("too many arguments")
	case c.Bool("d"):
		method = http.MethodDelete
	case len(a) == 2:
		method, target = http.MethodPut, "/log"+p.pound()+"/?level="+url.QueryEscape(a[1])
		if p.level() == levelListener {
			target = "/log" + p.pound() + "?level=" + url.QueryEscape(a[1])
		}
	}
	cn, err := r.connect()
	if err != nil {
		return err
	}
	if err := cn.needPound("log"); err != nil {
		return err
	}
	reply, err := cn.do(method, target, nil)
	if err != nil {
		return err
	}
	if method != http.MethodGet && r.opt.quiet && !r.opt.json {
		return nil
	}
	return r.printReply(reply)
}
