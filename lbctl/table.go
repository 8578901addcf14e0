package lbctl

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// row is one line of the listing table. Values the server does not report
// (live connections on the Pound socket, weights of a service) are "-".
type row struct {
	path, typ, name, addr, state          string
	prio, weight, conns, reqs, lat, sessn string
}

// tableHeader names the columns of the listing table. The two backend
// numbers are named as the dialect's configuration names them, since
// they mean different things: in Pound, PRIORITY is the backend's share
// of the balancing (what lbctl weight and lbctl priority set) and GROUP
// its balancer group (65535 for Emergency); in zproxy, PRIORITY is the
// backend's tier and WEIGHT its share.
func tableHeader(dialect string) row {
	second := "WEIGHT"
	if dialect == dialectPound {
		second = "GROUP"
	}
	return row{"PATH", "TYPE", "NAME", "ADDRESS", "STATE", "PRIORITY", second, "CONNS", "REQUESTS", "LATENCY", "SESSIONS"}
}

// writeTable prints rows under the dialect's header, aligned as ctr
// does: each column as wide as its widest cell plus two spaces, the last
// one unpadded. It writes what tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
// would, byte for byte, without tabwriter's cost per cell (a sixth of
// lbctl list's CPU at 30,000 rows); a cell holding one of the bytes
// tabwriter gives a meaning to (tab, newline, \v, \f, 0xff) sends the
// table through tabwriter itself.
func writeTable(w io.Writer, dialect string, rows []row) error {
	head := tableHeader(dialect)
	if !plainCells(&head) {
		return writeTabTable(w, head, rows)
	}
	var widths [rowColumns - 1]int
	widen := func(r *row) {
		cells := r.cells()
		for i, c := range cells[:rowColumns-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	widen(&head)
	for i := range rows {
		if !plainCells(&rows[i]) {
			return writeTabTable(w, head, rows)
		}
		widen(&rows[i])
	}
	buf := make([]byte, 0, 64<<10)
	line := func(r *row) {
		cells := r.cells()
		for i, c := range cells[:rowColumns-1] {
			buf = append(buf, c...)
			for n := widths[i] + tablePadding - utf8.RuneCountInString(c); n > 0; n-- {
				buf = append(buf, ' ')
			}
		}
		buf = append(append(buf, cells[rowColumns-1]...), '\n')
	}
	line(&head)
	for i := range rows {
		line(&rows[i])
		if len(buf) > cap(buf)-1024 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

// rowColumns is the number of cells in a row; tablePadding the spaces
// after a column's widest cell.
const (
	rowColumns   = 11
	tablePadding = 2
)

// cells are the row's cells in column order.
func (r *row) cells() [rowColumns]string {
	return [rowColumns]string{r.path, r.typ, r.name, r.addr, r.state, r.prio, r.weight, r.conns, r.reqs, r.lat, r.sessn}
}

// plainCells reports whether no cell of r holds a byte tabwriter treats
// as a cell or line end or an escape.
func plainCells(r *row) bool {
	for _, c := range r.cells() {
		for i := 0; i < len(c); i++ {
			switch c[i] {
			case '\t', '\n', '\v', '\f', tabwriter.Escape:
				return false
			}
		}
	}
	return true
}

// writeTabTable is writeTable through tabwriter.
func writeTabTable(w io.Writer, head row, rows []row) error {
	tw := tabwriter.NewWriter(w, 0, 4, tablePadding, ' ', 0)
	writeRow(tw, head)
	for i := range rows {
		writeRow(tw, rows[i])
	}
	return tw.Flush()
}

// writeRow writes one table line; tabwriter keeps the first error, which
// Flush returns.
func writeRow(tw *tabwriter.Writer, r row) {
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
		r.path, r.typ, r.name, r.addr, r.state, r.prio, r.weight, r.conns, r.reqs, r.lat, r.sessn)
}

// rows flattens the object into table rows, parents before children.
// Global services of a full listing appear under "/-".
func (o *object) rows() []row {
	// Sized once: a listing of 10,000 services and 20,000 backends is
	// 30,000 rows of 11 strings, which append's regrowth copied again
	// and again (a third of lbctl list's CPU at that size).
	out := make([]row, 0, o.rowCount())
	switch {
	case o.doc != nil:
		for i := range o.doc.Listeners {
			out = listenerRows(out, o.path.child(i).String(), &o.doc.Listeners[i])
		}
		global := objPath{segs: []string{"-"}}
		for i := range o.doc.Services {
			out = serviceRows(out, global.child(i).String(), &o.doc.Services[i])
		}
	case o.lst != nil:
		out = listenerRows(out, o.path.String(), o.lst)
	case o.svc != nil:
		out = serviceRows(out, o.path.String(), o.svc)
	case o.be != nil:
		out = append(out, backendRow(o.path.String(), o.be))
	}
	return out
}

// rowCount is the number of rows rows returns.
func (o *object) rowCount() int {
	services := func(svcs []service) int {
		n := len(svcs)
		for i := range svcs {
			n += len(svcs[i].Backends)
		}
		return n
	}
	switch {
	case o.doc != nil:
		n := services(o.doc.Services)
		for i := range o.doc.Listeners {
			n += 1 + services(o.doc.Listeners[i].Services)
		}
		return n
	case o.lst != nil:
		return 1 + services(o.lst.Services)
	case o.svc != nil:
		return 1 + len(o.svc.Backends)
	case o.be != nil:
		return 1
	}
	return 0
}

// walkBackends calls fn for every backend of the object with its path.
func (o *object) walkBackends(fn func(objPath, *backend)) {
	services := func(p objPath, svcs []service) {
		for i := range svcs {
			sp := p.child(i)
			for j := range svcs[i].Backends {
				fn(sp.child(j), &svcs[i].Backends[j])
			}
		}
	}
	switch {
	case o.doc != nil:
		for i := range o.doc.Listeners {
			services(o.path.child(i), o.doc.Listeners[i].Services)
		}
		services(objPath{segs: []string{"-"}}, o.doc.Services)
	case o.lst != nil:
		services(o.path, o.lst.Services)
	case o.svc != nil:
		for j := range o.svc.Backends {
			fn(o.path.child(j), &o.svc.Backends[j])
		}
	case o.be != nil:
		fn(o.path, o.be)
	}
}

// listenerRows, serviceRows and backendRow take the object's path as
// printed: the children's paths are that string and an index, not an
// objPath each (30,000 slices and joins in a large listing).
func listenerRows(out []row, path string, l *listener) []row {
	out = append(out, row{
		path: path, typ: "listener", name: deref(l.Name), addr: l.Protocol + "://" + l.Address,
		state: enabled(l.Enabled), prio: "-", weight: "-", conns: count(l.Connections),
		reqs: "-", lat: "-", sessn: "-",
	})
	for i := range l.Services {
		out = serviceRows(out, childPath(path, i), &l.Services[i])
	}
	return out
}

func serviceRows(out []row, path string, s *service) []row {
	sessions := "-"
	switch {
	case s.SessionType == "NONE":
	case s.SessionCount != nil:
		sessions = strconv.Itoa(*s.SessionCount)
	case s.Sessions != nil:
		sessions = strconv.Itoa(len(s.Sessions))
	}
	out = append(out, row{
		path: path, typ: "service", name: deref(s.Name), addr: "-", state: enabled(s.Enabled),
		prio: "-", weight: "-", conns: "-", reqs: "-", lat: "-", sessn: sessions,
	})
	for i := range s.Backends {
		out = append(out, backendRow(childPath(path, i), &s.Backends[i]))
	}
	return out
}

func backendRow(path string, b *backend) row {
	r := row{
		path: path, typ: b.Type, name: orDash(b.ID), addr: "-", state: backendState(b),
		prio: strconv.Itoa(b.Priority), weight: strconv.Itoa(b.Weight), conns: count(b.Connections),
		reqs: count(b.Requests), lat: "-", sessn: "-",
	}
	switch b.Type {
	case "backend":
		r.addr = b.Protocol + "://" + b.Address
	case "redirect":
		r.addr = strconv.Itoa(b.Code) + " " + orDash(b.URL)
	}
	if b.ResponseTime != nil {
		r.lat = latency(*b.ResponseTime * 1e9)
	}
	if b.Stats != nil {
		if b.Requests == nil {
			r.reqs = strconv.FormatInt(b.Stats.RequestCount, 10)
		}
		if b.ResponseTime == nil && b.Stats.RequestTimeAvg != nil {
			r.lat = latency(*b.Stats.RequestTimeAvg)
		}
	}
	return r
}

// childPath is the path of the i-th object below path.
func childPath(path string, i int) string {
	if path == "/" { // everything: objPath{}.String()
		path = ""
	}
	return path + "/" + strconv.Itoa(i)
}

// backendState combines the administrative and the health state:
// disabled, active (enabled and alive) or dead.
func backendState(b *backend) string {
	switch {
	case !b.Enabled:
		return "disabled"
	case b.Alive:
		return "active"
	}
	return "dead"
}

func enabled(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
}

// latency prints nanoseconds rounded to the microsecond.
func latency(ns float64) string {
	return time.Duration(ns).Round(time.Microsecond).String()
}

func count(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

func deref(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
