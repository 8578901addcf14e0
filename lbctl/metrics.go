package lbctl

import (
	"bufio"
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
		v, ok := m[strings.Join(p.segs, "/")]
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

// parseBackendMetrics indexes the per-backend samples by "L/S/B", once
// with indices and once with names where the objects have them, so a path
// typed either way finds them; global services use "-" for L.
func parseBackendMetrics(body []byte) map[string]*metricValues {
	out := map[string]*metricValues{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		name, labels, value, ok := parseSample(sc.Text())
		if !ok || labels["backend"] == "" {
			continue
		}
		lkeys := nonEmpty(labels["listener"], labels["listener_name"])
		if len(lkeys) == 0 {
			lkeys = []string{"-"}
		}
		for _, l := range lkeys {
			for _, s := range nonEmpty(labels["service"], labels["service_name"]) {
				key := l + "/" + s + "/" + labels["backend"]
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

func nonEmpty(a ...string) []string {
	var out []string
	for _, s := range a {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseSample splits `name{a="x",b="y"} value` (OpenMetrics text, label
// values with \\, \" and \n escapes). Comments and malformed lines give
// ok false.
func parseSample(line string) (name string, labels map[string]string, value string, ok bool) {
	if line == "" || line[0] == '#' {
		return "", nil, "", false
	}
	labels = map[string]string{}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", nil, "", false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		var err error
		if rest, err = parseLabels(rest[1:], labels); err != nil {
			return "", nil, "", false
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, "", false
	}
	return name, labels, fields[0], true
}

// parseLabels reads `a="x",b="y"}` into labels and returns what follows.
func parseLabels(s string, labels map[string]string) (string, error) {
	for {
		if strings.HasPrefix(s, "}") {
			return s[1:], nil
		}
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return "", fmt.Errorf("bad label")
		}
		key := strings.TrimPrefix(s[:eq], ",")
		var val strings.Builder
		j := eq + 2
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
		if j >= len(s) {
			return "", fmt.Errorf("unterminated label")
		}
		labels[key] = val.String()
		s = s[j+1:]
	}
}
