package lbctl

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// metricsCommand prints the OpenMetrics exposition lbd serves on the Pound
// control socket (GET /metrics; the same text as a Metrics service).
func (r *runner) metricsCommand() *cli.Command {
	return &cli.Command{
		Name:  "metrics",
		Usage: "print the OpenMetrics exposition (Pound socket only)",
		Action: func(c *cli.Context) error {
			cn, err := r.connectNoArgs(c)
			if err != nil {
				return err
			}
			if err := cn.needPound("metrics"); err != nil {
				return err
			}
			body, err := cn.get("/metrics")
			if err != nil {
				return err
			}
			_, err = r.env.Stdout.Write(body)
			return err
		},
	}
}

// metricValues are the per-backend numbers the table takes from the
// exposition when the listing lacks them (Pound's JSON has neither
// request counts without BackendStats nor response times).
type metricValues struct {
	requests *int64
	respTime *float64 // seconds
}

// metricKey is a backend's listener, service and backend segments, as
// indices or names ("-" for the listener of a global service).
type metricKey [3]string

// addMetrics fills requests and latency of the object's backends from
// GET /metrics. It is best effort: a server without the endpoint just
// leaves the columns empty.
func addMetrics(cn *conn, o *object) {
	// Only the two families the table shows: the whole exposition of a
	// large configuration is hundreds of MB (a server that does not
	// filter answers with all of it, which still works).
	body, err := cn.get("/metrics?family=pound_backend_requests&family=pound_backend_response_time_seconds")
	if err != nil {
		return
	}
	m := parseBackendMetrics(body)
	o.walkBackends(func(p objPath, b *backend) {
		if len(p.segs) != len(metricKey{}) {
			return
		}
		v, ok := m[metricKey(p.segs)]
		if !ok {
			return
		}
		if b.Requests == nil && b.Stats == nil {
			b.Requests = v.requests
		}
		if b.ResponseTime == nil {
			b.ResponseTime = v.respTime
		}
	})
}

// lacksRequests reports whether a backend of o has no request count:
// the reply came from Pound, an lbd before ?requests=1, or without it.
func (o *object) lacksRequests() bool {
	lacks := false
	o.walkBackends(func(_ objPath, b *backend) { lacks = lacks || b.Requests == nil })
	return lacks
}

// parseBackendMetrics indexes the samples of the two families the table
// shows by backend, once with indices and once with names where the
// objects have them, so a path typed either way finds them; global
// services use "-" for the listener. Keys are substrings of body's one
// copy: a listing of 20,000 backends made four strings, a map and a
// slice per sample before (a sixth of lbctl list's CPU).
func parseBackendMetrics(body []byte) map[metricKey]*metricValues {
	// Sized for a name and an index key per sample: growing the map
	// rehashed it a dozen times.
	out := make(map[metricKey]*metricValues, 2*bytes.Count(body, []byte{'\n'}))
	text := string(body)
	var labels []label
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		line = strings.TrimSuffix(line, "\r") // as bufio.ScanLines
		var name, value string
		var ok bool
		name, labels, value, ok = parseSample(line, labels[:0])
		if !ok || (name != "pound_backend_requests_total" && name != "pound_backend_response_time_seconds") {
			continue
		}
		be := labelValue(labels, "backend")
		if be == "" {
			continue
		}
		lkeys := nonEmpty(labelValue(labels, "listener"), labelValue(labels, "listener_name"))
		if len(lkeys) == 0 {
			lkeys = []string{"-"}
		}
		for _, l := range lkeys {
			for _, s := range nonEmpty(labelValue(labels, "service"), labelValue(labels, "service_name")) {
				key := metricKey{l, s, be}
				v := out[key]
				if v == nil {
					v = &metricValues{}
					out[key] = v
				}
				setMetric(v, name, value)
			}
		}
	}
	return out
}

// setMetric stores the samples the table shows.
func setMetric(v *metricValues, name, value string) {
	switch name {
	case "pound_backend_requests_total":
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			v.requests = &n
		}
	case "pound_backend_response_time_seconds":
		if f, err := strconv.ParseFloat(value, 64); err == nil {
			v.respTime = &f
		}
	}
}

// nonEmpty returns the non-empty ones of a and b.
func nonEmpty(a, b string) []string {
	switch {
	case a == "" && b == "":
		return nil
	case a == "":
		return []string{b}
	case b == "":
		return []string{a}
	}
	return []string{a, b}
}

// label is one name="value" of a sample.
type label struct{ key, val string }

// labelValue is the value of the last label called key ("" if none), as
// a map filled in order would hold it.
func labelValue(labels []label, key string) string {
	for i := len(labels) - 1; i >= 0; i-- {
		if labels[i].key == key {
			return labels[i].val
		}
	}
	return ""
}

// parseSample splits `name{a="x",b="y"} value` (OpenMetrics text, label
// values with \\, \" and \n escapes), appending the labels to labels.
// Comments and malformed lines give ok false.
func parseSample(line string, labels []label) (name string, _ []label, value string, ok bool) {
	if line == "" || line[0] == '#' {
		return "", labels, "", false
	}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", labels, "", false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		var err error
		if rest, labels, err = parseLabels(rest[1:], labels); err != nil {
			return "", labels, "", false
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", labels, "", false
	}
	return name, labels, fields[0], true
}

// parseLabels reads `a="x",b="y"}` into labels and returns what follows.
// A value without escapes is a substring of s.
func parseLabels(s string, labels []label) (string, []label, error) {
	for {
		if strings.HasPrefix(s, "}") {
			return s[1:], labels, nil
		}
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return "", labels, fmt.Errorf("bad label")
		}
		key := strings.TrimPrefix(s[:eq], ",")
		j := eq + 2
		for j < len(s) && s[j] != '"' && s[j] != '\\' {
			j++
		}
		val := s[eq+2 : j]
		if j < len(s) && s[j] == '\\' {
			val, j = unescapeLabel(s, eq+2)
		}
		if j >= len(s) {
			return "", labels, fmt.Errorf("unterminated label")
		}
		labels = append(labels, label{key, val})
		s = s[j+1:]
	}
}

// unescapeLabel reads the value starting at s[j] up to its closing quote,
// undoing \n and the backslash before any other byte, and returns it
// with the index of the quote (len(s) when there is none).
func unescapeLabel(s string, j int) (string, int) {
	var val strings.Builder
	for ; j < len(s) && s[j] != '"'; j++ {
		if s[j] == '\\' && j+1 < len(s) {
			j++
			if s[j] == 'n' {
				val.WriteByte('\n')
				continue
			}
		}
		val.WriteByte(s[j])
	}
	return val.String(), j
}
