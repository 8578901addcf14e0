package lbctl

import (
	"errors"
	"net/http"

	"github.com/urfave/cli/v2"

	"lbd/adminapi/client"
)

// listCommand is poundctl's list, also the command run when none is
// given.
func (r *runner) listCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "show listeners, services and backends with their state",
		ArgsUsage: "[/L[/S[/B]]]",
		Action: func(c *cli.Context) error {
			a, err := args(c, 0, 1)
			if err != nil {
				return err
			}
			return r.list(first(a))
		},
	}
}

// list prints the object at arg ("" for everything).
func (r *runner) list(arg string) error {
	p, err := parsePath(arg)
	if err != nil {
		return err
	}
	cn, err := r.connect()
	if err != nil {
		return err
	}
	var o *object
	var reply []byte
	if cn.dialect == dialectPound && !r.opt.json && !r.useTemplate() {
		// The table shows session counts: lbd sends those instead of
		// tables that may hold millions of sessions.
		o, reply, err = fetchCounts(cn, p)
	} else {
		o, reply, err = fetch(cn, p)
	}
	if err != nil {
		return err
	}
	return r.printObject(cn, o, reply)
}

// fetchCounts is fetch from a Pound socket with ?sessions=count and
// ?requests=1, lbd's extensions; a server that refuses it (an lbd before it) is asked again
// without. Pound itself ignores the parameter and lists the sessions,
// which the table counts.
func fetchCounts(cn *conn, p objPath) (*object, []byte, error) {
	if p.level() == levelListener && p.segs[0] == "-" {
		p = objPath{}
	}
	// requests=1: lbd puts the numbers the table takes from GET /metrics
	// in the backends (addMetrics asks for them when a server did not).
	reply, err := cn.get("/listener" + p.pound() + "?sessions=count&requests=1")
	var se *client.StatusError
	if errors.As(err, &se) && se.Status == http.StatusBadRequest {
		return fetch(cn, p)
	}
	if err != nil {
		return nil, nil, err
	}
	o, err := decodePound(p, reply)
	return o, reply, err
}

// fetch gets the object at p: GET /listener/L/S/B from Pound, the matching
// zproxy GET otherwise, decoded into Pound's shape.
func fetch(cn *conn, p objPath) (*object, []byte, error) {
	if cn.dialect == dialectPound {
		if p.level() == levelListener && p.segs[0] == "-" {
			p = objPath{} // Pound answers "/-" with the full listing
		}
		reply, err := cn.get("/listener" + p.pound())
		if err != nil {
			return nil, nil, err
		}
		o, err := decodePound(p, reply)
		return o, reply, err
	}
	u, err := p.zproxy()
	if err != nil {
		return nil, nil, err
	}
	if u == "" {
		u = "/listeners"
	}
	reply, err := cn.get(u)
	if err != nil {
		return nil, nil, err
	}
	o, err := decodeZproxy(p, reply)
	return o, reply, err
}

// first returns the first argument or "".
func first(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return a[0]
}
