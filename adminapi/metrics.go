package adminapi

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// MetricsContentType is the Content-Type Pound's Metrics backend sends.
const MetricsContentType = "application/openmetrics-text; version=1.0.0; charset=utf-8"

// metricFamily is one # TYPE block of the exposition.
type metricFamily struct {
	name, typ, unit, help string
	samples               []metricSample
	// suffixed is name+suffix, the sample name add made last.
	suffix, suffixed string
}

// metricSample is one line: full sample name, labels in order, value text.
type metricSample struct {
	name   string
	labels [][2]string
	value  string
}

// Families in output order. Pound's (doc/metrics.texi, metrics.c) come
// first with Pound's names, types and help texts, quirks included (a
// stateset without state label, an info family without _info, uptime in
// microseconds). lbd adds per-backend request and error counters and the
// response time. Pound's BackendStats gauge "pound_backend_requests" is
// not emitted: OpenMetrics derives the family of pound_backend_requests_total
// from the same name, and two families may not share it.
var metricFamilies = []metricFamily{
	{name: "pound_uptime", typ: "counter", help: "Pound uptime, milliseconds since startup."},
	{name: "pound_workers", typ: "gauge", help: "Number of pound workers."},
	{name: "pound_queue_len", typ: "counter", help: "Number of requests waiting in queue."},
	{name: "pound_listener_enabled", typ: "stateset", help: "State of a listener: enabled/disabled."},
	{name: "pound_listener_info", typ: "info", help: "Description of a listener."},
	{name: "pound_service_enabled", typ: "stateset", help: "State of a particular service."},
	{name: "pound_backends", typ: "gauge", help: "Number of backends per service: total, alive, enabled, and active (both alive and enabled)."},
	{name: "pound_backend_state", typ: "stateset", help: "Backend states: alive and enabled."},
	{name: "pound_backend_request_time_avg_nanoseconds", typ: "gauge", unit: "nanoseconds", help: "Average time per request spent in backend."},
	{name: "pound_backend_request_stddev_nanoseconds", typ: "gauge", unit: "nanoseconds", help: "Standard deviation of the average time per request."},
	{name: "pound_backend_requests", typ: "counter", help: "Requests forwarded to the backend."},
	{name: "pound_backend_errors", typ: "counter", help: "Requests to the backend that failed (connect or I/O error, 5xx)."},
	{name: "pound_backend_response_time_seconds", typ: "gauge", unit: "seconds", help: "Moving average of the backend response time."},
}

// exposition collects samples per family.
type exposition struct {
	fams  []metricFamily
	index map[string]int
	// only, when set, names the families to write (GET /metrics?family=):
	// the others are not even formatted.
	only map[string]bool
}

// wants reports whether family fam is written.
func (e *exposition) wants(fam string) bool { return e.only == nil || e.only[fam] }

func newExposition() *exposition {
	e := &exposition{fams: append([]metricFamily(nil), metricFamilies...), index: map[string]int{}}
	for i, f := range e.fams {
		e.index[f.name] = i
	}
	return e
}

// add records a sample of family fam; suffix is appended to the sample name
// ("_total" for counters in OpenMetrics form, "" for Pound's own).
func (e *exposition) add(fam, suffix string, labels [][2]string, value string) {
	if !e.wants(fam) {
		return
	}
	f := &e.fams[e.index[fam]]
	name := fam
	if suffix != "" {
		// One string per family, not per sample (20,000 backends).
		if f.suffix != suffix {
			f.suffix, f.suffixed = suffix, fam+suffix
		}
		name = f.suffixed
	}
	f.samples = append(f.samples, metricSample{name: name, labels: labels, value: value})
}

// WriteMetrics writes st as OpenMetrics text: Pound's metric families (the
// control socket included as listener 0, as in Pound), lbd's per-backend
// counters and the lbd_* families (metrics_lbd.go), ending with "# EOF".
// The engine's Metrics backend serves the same text with
// MetricsContentType.
func WriteMetrics(w io.Writer, st *State) error { return WriteMetricsFamilies(w, st, nil) }

// WriteMetricsFamilies is WriteMetrics restricted to the named families
// (all when families is empty): lbctl list reads two of them, which at
// 20,000 backends is a few MB instead of 200.
func WriteMetricsFamilies(w io.Writer, st *State, families []string) error {
	return writeMetrics(w, &summaryStream{st: st}, families)
}

// WriteStreamedMetrics is WriteMetrics of c's streamed Summary: the
// services are taken one at a time instead of a State of all of them.
func WriteStreamedMetrics(w io.Writer, c SummaryStreamer) error {
	s := pullSummary(c)
	defer s.close()
	return writeMetrics(w, s, nil)
}

// writeMetrics is WriteMetricsFamilies of a Summary, its services taken
// from s in State's order.
func writeMetrics(w io.Writer, s *summaryStream, families []string) error {
	st := s.st
	v := newPoundView(st)
	e := newExposition()
	if len(families) > 0 {
		e.only = map[string]bool{}
		for _, f := range families {
			e.only[f] = true
		}
	}
	c := &st.Core
	e.add("pound_uptime", "", nil, strconv.FormatInt(c.Uptime.Microseconds(), 10))
	for _, wk := range []struct {
		typ string
		n   int
	}{{"active", c.Workers.Active}, {"count", c.Workers.Count}, {"max", c.Workers.Max}, {"min", c.Workers.Min}} {
		e.add("pound_workers", "", [][2]string{{"type", wk.typ}}, strconv.Itoa(wk.n))
	}
	e.add("pound_queue_len", "", nil, strconv.Itoa(c.QueueLen))
	e.lbdCore(c)
	for i := range v.listeners {
		l := &v.listeners[i]
		lbl := withName([][2]string{{"listener", strconv.Itoa(i)}}, "listener_name", l.Name)
		e.add("pound_listener_enabled", "", lbl, boolValue(l.Enabled))
		info := append(append([][2]string(nil), lbl...), [2]string{"address", poundAddress(l)}, [2]string{"protocol", l.protocol()})
		e.add("pound_listener_info", "", info, "1")
		e.lbdListener(lbl, l)
		if v.isControl(i) { // synthesised here, not in the State
			e.services(lbl, l.Services, len(l.Services), st.BackendStats, nil)
		} else {
			e.services(lbl, l.Services, s.count(v.stateIndex(i), l.Services), st.BackendStats, s)
		}
	}
	e.services(nil, st.Services, s.count(-1, st.Services), st.BackendStats, s)
	e.cluster(st.Cluster, c.Timestamp)
	e.acme(st.ACME, c.Timestamp)
	return e.write(w)
}

// services adds the samples of n services and their backends below the
// label prefix: svcs, or each taken from the stream when there is one.
func (e *exposition) services(prefix [][2]string, svcs []Service, n int, stats bool, from *summaryStream) {
	for i := range n {
		var s *Service
		if from != nil {
			s = from.take(svcs, i)
		} else {
			s = &svcs[i]
		}
		lbl := withName(append(append([][2]string(nil), prefix...), [2]string{"service", strconv.Itoa(i)}), "service_name", s.Name)
		e.add("pound_service_enabled", "", lbl, boolValue(s.Enabled))
		e.lbdService(lbl, s)
		var enabled, alive, active int
		for _, b := range s.Backends {
			if b.Enabled {
				enabled++
			}
			if b.Alive {
				alive++
				if b.Enabled {
					active++
				}
			}
		}
		for _, n := range []struct {
			state string
			n     int
		}{{"total", len(s.Backends)}, {"enabled", enabled}, {"alive", alive}, {"active", active}} {
			if e.wants("pound_backends") {
				e.add("pound_backends", "", with(lbl, "state", n.state), strconv.Itoa(n.n))
			}
		}
		for j := range s.Backends {
			e.backend(with(lbl, "backend", strconv.Itoa(j)), &s.Backends[j], stats)
		}
	}
}

// backend adds the samples of one backend.
// The labels a family needs are built only when the family is written
// (?family=): lbctl list asks for two of them at 20,000 backends.
func (e *exposition) backend(lbl [][2]string, b *Backend, stats bool) {
	if e.wants("pound_backend_state") {
		e.add("pound_backend_state", "", with(lbl, "state", "alive"), boolValue(b.Alive))
		e.add("pound_backend_state", "", with(lbl, "state", "enabled"), boolValue(b.Enabled))
	}
	e.lbdBackend(lbl, b)
	if stats && b.Requests > 0 {
		e.add("pound_backend_request_time_avg_nanoseconds", "", lbl, strconv.FormatInt(b.RequestTimeAvg.Nanoseconds(), 10))
		e.add("pound_backend_request_stddev_nanoseconds", "", lbl, strconv.FormatInt(b.RequestTimeStddev.Nanoseconds(), 10))
	}
	e.add("pound_backend_requests", "_total", lbl, strconv.FormatInt(b.Requests, 10))
	e.add("pound_backend_errors", "_total", lbl, strconv.FormatInt(b.Errors, 10))
	if b.ResponseTime >= 0 {
		e.add("pound_backend_response_time_seconds", "", lbl, strconv.FormatFloat(b.ResponseTime.Seconds(), 'g', -1, 64))
	}
}

// write prints the families that have samples, then # EOF. The
// bufio.Writer keeps the first write error and Flush returns it.
func (e *exposition) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, f := range e.fams {
		if len(f.samples) == 0 {
			continue
		}
		bw.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
		if f.unit != "" {
			bw.WriteString("# UNIT " + f.name + " " + f.unit + "\n")
		}
		bw.WriteString("# HELP " + f.name + " " + f.help + "\n")
		for _, s := range f.samples {
			bw.WriteString(s.name)
			if len(s.labels) > 0 {
				bw.WriteByte('{')
				for i, l := range s.labels {
					if i > 0 {
						bw.WriteByte(',')
					}
					bw.WriteString(l[0])
					bw.WriteString(`="`)
					bw.WriteString(escapeLabel(l[1]))
					bw.WriteByte('"')
				}
				bw.WriteByte('}')
			}
			bw.WriteByte(' ')
			bw.WriteString(s.value)
			bw.WriteByte('\n')
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}

// with returns a copy of lbl with one more label (copies so sibling
// samples never share a backing array).
func with(lbl [][2]string, name, value string) [][2]string {
	return append(append(make([][2]string, 0, len(lbl)+1), lbl...), [2]string{name, value})
}

// withName adds a name label only when the object is named, as Pound does.
func withName(lbl [][2]string, label, name string) [][2]string {
	if name == "" {
		return lbl
	}
	return with(lbl, label, name)
}

// escapeLabel escapes a label value for OpenMetrics (Pound does not, which
// breaks on names with quotes).
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s // most names: no copy, no replacer
	}
	return labelEscaper.Replace(s)
}

// labelEscaper is built once: building a Replacer per label was the
// exposition's largest cost at 20,000 backends (lbctl list reads it).
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func boolValue(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
