package lbctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"

	"lbd/adminapi/client"
)

// sessionPageSize is how many sessions lbctl asks for at a time.
const sessionPageSize = 1000

// sessionPage is the reply of GET /listener/L/S/sessions (lbd's
// extension): a page of sessions in key order and the key after which
// the next one starts (null on the last page).
type sessionPage struct {
	Next     *string   `json:"next"`
	Sessions []session `json:"sessions"`
}

// listSessionPages prints a service's sessions a page at a time, so a
// table of a million sessions is never copied whole by lbd nor held by
// lbctl: each page is printed as it comes, in key order. It reports
// false, and prints nothing, when the server has no paged listing (Pound
// itself, an older lbd): the caller then lists the sessions the old way.
func (r *runner) listSessionPages(cn *conn, p objPath) (bool, error) {
	o, _, err := fetchCounts(cn, p)
	if err != nil {
		return true, err
	}
	s := o.svc
	if s == nil {
		return false, nil
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 4, 2, ' ', 0)
	after := ""
	for first := true; ; first = false {
		reply, err := cn.get("/listener" + p.pound() + "/sessions?limit=" + fmt.Sprint(sessionPageSize) + "&after=" + url.QueryEscape(after))
		var se *client.StatusError
		if first && errors.As(err, &se) && se.Status == http.StatusNotFound {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		var pg sessionPage
		if err := json.Unmarshal(reply, &pg); err != nil {
			return true, fmt.Errorf("unexpected reply to GET %s/sessions: %w", p.pound(), err)
		}
		if first && !r.opt.quiet {
			fmt.Fprintln(tw, "SERVICE\tKEY\tBACKEND\tEXPIRES\tLAST-SEEN")
		}
		for _, ss := range pg.Sessions {
			if r.opt.quiet {
				fmt.Fprintln(tw, ss.Key)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p, ss.Key, sessionBackend(s, ss.Backend), orDash(ss.Expire), lastSeen(ss.LastSeen))
		}
		if err := tw.Flush(); err != nil {
			return true, err
		}
		if pg.Next == nil {
			return true, nil
		}
		after = *pg.Next
	}
}
