package lbctl

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// writeLimits prints, after the listing table, the rate limits (TBF) and
// BasicAuth password files of the listed listeners and services, each
// under the path of the object that uses it: how many buckets a filter
// holds for keys seen lately, which generation of a file's content is in
// use (it goes up each time a change is picked up). Nothing is printed
// when there are none.
func writeLimits(w io.Writer, o *object) error {
	var tbfs, files [][]string
	add := func(p objPath, l *limits) {
		for _, t := range l.TBF {
			tbfs = append(tbfs, []string{p.String(), t.Key, rate(t.Interval), strconv.FormatUint(t.Burst, 10),
				strconv.Itoa(t.Buckets)})
		}
		for _, f := range l.BasicAuth {
			files = append(files, []string{p.String(), f.File, strconv.FormatUint(f.Generation, 10),
				strconv.Itoa(f.Users), yesNo(f.Watch)})
		}
	}
	services := func(p objPath, svcs []service) {
		for i := range svcs {
			add(p.child(i), &svcs[i].limits)
		}
	}
	switch {
	case o.doc != nil:
		for i := range o.doc.Listeners {
			l := &o.doc.Listeners[i]
			add(o.path.child(i), &l.limits)
			services(o.path.child(i), l.Services)
		}
		services(objPath{segs: []string{"-"}}, o.doc.Services)
	case o.lst != nil:
		add(o.path, &o.lst.limits)
		services(o.path, o.lst.Services)
	case o.svc != nil:
		add(o.path, &o.svc.limits)
	}
	if err := writeSection(w, []string{"PATH", "TBF KEY", "RATE", "BURST", "BUCKETS"}, tbfs); err != nil {
		return err
	}
	return writeSection(w, []string{"PATH", "BASICAUTH FILE", "GENERATION", "USERS", "WATCHED"}, files)
}

// writeSection prints a blank line and an aligned table, if there are rows.
func writeSection(w io.Writer, header []string, rows [][]string) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// rate prints a time per token as requests per second.
func rate(intervalNs int64) string {
	if intervalNs <= 0 {
		return "-"
	}
	if 1e9%intervalNs == 0 {
		return strconv.FormatInt(1e9/intervalNs, 10) + "/s"
	}
	return strconv.FormatFloat(1e9/float64(intervalNs), 'g', 3, 64) + "/s"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
