package lbctl

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
)

// addCommand is poundctl's add: pin a session key to a backend.
func (r *runner) addCommand() *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "add a session KEY pointing at backend B",
		ArgsUsage: "/L/S/B KEY",
		Action:    r.addSession,
	}
}

// deleteCommand is poundctl's delete (alias del).
func (r *runner) deleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Aliases:   []string{"del"},
		Usage:     "delete the session KEY of a service",
		ArgsUsage: "/L/S KEY",
		Action:    r.deleteSession,
	}
}

// sessionCommand groups the session verbs; add and delete repeat the
// poundctl commands under the noun.
func (r *runner) sessionCommand() *cli.Command {
	return &cli.Command{
		Name:  "session",
		Usage: "list, add, delete and flush sessions",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "list session keys with their backend and expiry", ArgsUsage: "[/L[/S]]", Action: r.listSessions},
			{Name: "add", Usage: "add a session KEY pointing at backend B", ArgsUsage: "/L/S/B KEY", Action: r.addSession},
			{Name: "delete", Aliases: []string{"del"}, Usage: "delete the session KEY of a service", ArgsUsage: "/L/S KEY", Action: r.deleteSession},
			{Name: "flush", Usage: "delete all sessions of a service, or those of backend B", ArgsUsage: "/L/S[/B]", Action: r.flushSessions},
		},
	}
}

// sessionArgs parses "/L/S[/B] KEY" with the depth the verb needs.
func (r *runner) sessionArgs(c *cli.Context, min, max int) (*conn, objPath, string, error) {
	a, err := args(c, 2, 2)
	if err != nil {
		return nil, objPath{}, "", err
	}
	p, err := parsePath(a[0])
	if err == nil {
		err = p.need(min, max)
	}
	if err != nil {
		return nil, objPath{}, "", err
	}
	cn, err := r.connect()
	return cn, p, a[1], err
}

// addSession is PUT /session/L/S/B?key=K (Pound) or PUT .../sessions
// {"id", "backend-id"} (zproxy); like poundctl it then shows the service.
func (r *runner) addSession(c *cli.Context) error {
	cn, p, key, err := r.sessionArgs(c, levelBackend, levelBackend)
	if err != nil {
		return err
	}
	svc := objPath{segs: p.segs[:levelService]}
	if cn.dialect == dialectPound {
		reply, err := cn.do(http.MethodPut, "/session"+p.pound()+"?key="+url.QueryEscape(key), nil)
		if err != nil {
			return err
		}
		return r.printChanged(cn, svc, reply)
	}
	u, err := svc.zproxy()
	if err != nil {
		return err
	}
	body := map[string]string{"id": key, "backend-id": p.segs[2]}
	if _, err := cn.do(http.MethodPut, u+"/sessions", body); err != nil {
		return err
	}
	return r.printChanged(cn, svc, nil)
}

// deleteSession is DELETE /session/L/S?key=K (Pound) or DELETE
// .../sessions {"id"} (zproxy), then shows the service.
func (r *runner) deleteSession(c *cli.Context) error {
	cn, p, key, err := r.sessionArgs(c, levelService, levelService)
	if err != nil {
		return err
	}
	if cn.dialect == dialectPound {
		reply, err := cn.do(http.MethodDelete, "/session"+p.pound()+"?key="+url.QueryEscape(key), nil)
		if err != nil {
			return err
		}
		return r.printChanged(cn, p, reply)
	}
	u, err := p.zproxy()
	if err != nil {
		return err
	}
	if _, err := cn.do(http.MethodDelete, u+"/sessions", map[string]string{"id": key}); err != nil {
		return err
	}
	return r.printChanged(cn, p, nil)
}

// printChanged shows the service after a session change: Pound's reply,
// or (zproxy, whose reply is only {"result":"ok"}) a fresh listing.
func (r *runner) printChanged(cn *conn, svc objPath, reply []byte) error {
	if r.opt.quiet && !r.opt.json {
		return nil
	}
	var o *object
	var err error
	if reply != nil {
		o, err = decodePound(svc, reply)
	} else {
		o, reply, err = fetch(cn, svc)
	}
	if err != nil {
		return err
	}
	return r.printObject(cn, o, reply)
}

// flushSessions removes all sessions of a service, or only those of one
// backend. zproxy has an endpoint for it (DELETE .../sessions); on the
// Pound socket lbctl deletes the keys one by one.
func (r *runner) flushSessions(c *cli.Context) error {
	a, err := args(c, 1, 1)
	if err != nil {
		return err
	}
	p, err := parsePath(a[0])
	if err == nil {
		err = p.need(levelService, levelBackend)
	}
	if err != nil {
		return err
	}
	cn, err := r.connect()
	if err != nil {
		return err
	}
	svc := objPath{segs: p.segs[:levelService]}
	if cn.dialect == dialectZproxy {
		u, err := svc.zproxy()
		if err != nil {
			return err
		}
		var body any
		if p.level() == levelBackend {
			body = map[string]string{"backend-id": p.segs[2]}
		}
		_, err = cn.do(http.MethodDelete, u+"/sessions", body)
		return err
	}
	return flushPound(cn, svc, p)
}

// flushPound deletes the sessions of svc one key at a time, those of
// backend p.segs[2] only when p names one.
func flushPound(cn *conn, svc, p objPath) error {
	be := -1
	if p.level() == levelBackend {
		n, err := strconv.Atoi(p.segs[2])
		if err != nil || n < 0 {
			return fmt.Errorf("bad uri: backend %q is not an index", p.segs[2])
		}
		be = n
	}
	o, _, err := fetch(cn, svc)
	if err != nil {
		return err
	}
	if be >= len(o.svc.Backends) {
		return fmt.Errorf("%s: Not Found", p)
	}
	for _, s := range o.svc.Sessions {
		if be >= 0 && s.Backend != be {
			continue
		}
		if _, err := cn.do(http.MethodDelete, "/session"+svc.pound()+"?key="+url.QueryEscape(s.Key), nil); err != nil {
			return fmt.Errorf("deleting session %s: %w", s.Key, err)
		}
	}
	return nil
}

// listSessions prints the session tables below a path: a table of path,
// key, backend and expiry (Pound) or last use (zproxy), the keys only
// with --quiet, or the listing through -j or a template.
func (r *runner) listSessions(c *cli.Context) error {
	a, err := args(c, 0, 1)
	if err != nil {
		return err
	}
	p, err := parsePath(first(a))
	if err == nil {
		err = p.need(levelAll, levelService)
	}
	if err != nil {
		return err
	}
	cn, err := r.connect()
	if err != nil {
		return err
	}
	if cn.dialect == dialectPound && p.level() == levelService && !r.opt.json && !r.useTemplate() {
		done, err := r.listSessionPages(cn, p)
		if done || err != nil {
			return err
		}
	}
	o, reply, err := fetch(cn, p)
	if err != nil {
		return err
	}
	if r.opt.json || (r.useTemplate() && !r.opt.quiet) {
		return r.printObject(cn, o, reply)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 4, 2, ' ', 0)
	if !r.opt.quiet {
		fmt.Fprintln(tw, "SERVICE\tKEY\tBACKEND\tEXPIRES\tLAST-SEEN")
	}
	o.walkServices(func(sp objPath, s *service) {
		for _, ss := range s.Sessions {
			if r.opt.quiet {
				fmt.Fprintln(tw, ss.Key)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sp, ss.Key, sessionBackend(s, ss.Backend), orDash(ss.Expire), lastSeen(ss.LastSeen))
		}
	})
	return tw.Flush()
}

// walkServices calls fn for every service of the object with its path.
func (o *object) walkServices(fn func(objPath, *service)) {
	switch {
	case o.doc != nil:
		for i := range o.doc.Listeners {
			lp := o.path.child(i)
			for j := range o.doc.Listeners[i].Services {
				fn(lp.child(j), &o.doc.Listeners[i].Services[j])
			}
		}
		for j := range o.doc.Services {
			fn(objPath{segs: []string{"-"}}.child(j), &o.doc.Services[j])
		}
	case o.lst != nil:
		for j := range o.lst.Services {
			fn(o.path.child(j), &o.lst.Services[j])
		}
	case o.svc != nil:
		fn(o.path, o.svc)
	}
}

// sessionBackend names a session's backend: its index, and its id or
// address when known.
func sessionBackend(s *service, i int) string {
	if i < 0 || i >= len(s.Backends) {
		return strconv.Itoa(i)
	}
	b := &s.Backends[i]
	switch {
	case b.ID != "":
		return strconv.Itoa(i) + " (" + b.ID + ")"
	case b.Address != "":
		return strconv.Itoa(i) + " (" + b.Address + ")"
	}
	return strconv.Itoa(i)
}

// lastSeen prints zproxy's last-seen in UTC: "-" when unknown, "static"
// for a session that never expires.
func lastSeen(p *int64) string {
	switch {
	case p == nil:
		return "-"
	case *p == 0:
		return "static"
	}
	return time.Unix(*p, 0).UTC().Format(time.RFC3339)
}
