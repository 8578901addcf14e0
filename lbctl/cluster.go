package lbctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"lbd/adminapi/client"
)

// clusterView is GET /cluster (lbd's Cluster section, both dialects).
type clusterView struct {
	Node            string  `json:"node"`
	Redis           string  `json:"redis"`
	Connected       bool    `json:"connected"`
	Since           *string `json:"since"`
	LastError       *string `json:"last_error"`
	SessionsSent    int64   `json:"sessions_sent"`
	SessionsApplied int64   `json:"sessions_applied"`
	SessionsDropped int64   `json:"sessions_dropped"`
	StateSent       int64   `json:"state_sent"`
	StateApplied    int64   `json:"state_applied"`
	StatePending    int64   `json:"state_pending"`
	StateKept       int64   `json:"state_kept"`
	LagP50          int64   `json:"lag_p50_us"`
	LagP99          int64   `json:"lag_p99_us"`
	LagSamples      int64   `json:"lag_samples"`
	LagCount        int64   `json:"lag_count"`
	Nodes           []struct {
		Name        string  `json:"name"`
		Self        bool    `json:"self"`
		Connected   bool    `json:"connected"`
		LastContact *string `json:"last_contact"`
		LagP50      int64   `json:"lag_p50_us"`
		LagP99      int64   `json:"lag_p99_us"`
		LagSamples  int64   `json:"lag_samples"`
		Applied     int64   `json:"applied"`
	} `json:"nodes"`
}

// errNoCluster is a server without a Cluster section.
var errNoCluster = errors.New("this lbd is not in a cluster (no Cluster section)")

// fetchCluster gets GET /cluster; errNoCluster when the server has none
// (404 from the Pound socket, 400 from the zproxy one).
func fetchCluster(cn *conn) (*clusterView, []byte, error) {
	_, reply, err := cn.c.Do(http.MethodGet, "/cluster", nil)
	var se *client.StatusError
	if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusBadRequest) {
		return nil, nil, errNoCluster
	}
	if err != nil {
		return nil, nil, replyError(err)
	}
	var v clusterView
	if err := json.Unmarshal(reply, &v); err != nil {
		return nil, nil, fmt.Errorf("unexpected reply to GET /cluster: %w", err)
	}
	return &v, reply, nil
}

// clusterCommand shows the cluster this lbd belongs to.
func (r *runner) clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "show the cluster members: their Redis connection, lag and last contact",
		Action: func(c *cli.Context) error {
			cn, err := r.connectNoArgs(c)
			if err != nil {
				return err
			}
			v, reply, err := fetchCluster(cn)
			if err != nil {
				return err
			}
			if r.opt.json {
				return r.printJSON(reply)
			}
			return writeCluster(r.env.Stdout, v, time.Now())
		},
	}
}

// writeCluster prints the members as a table under a summary.
func writeCluster(w io.Writer, v *clusterView, now time.Time) error {
	fmt.Fprintln(w, clusterSummary(v, now))
	fmt.Fprintf(w, "sessions: %d sent, %d applied, %d dropped; runtime state: %d sent, %d applied, %d pending, %d kept\n",
		v.SessionsSent, v.SessionsApplied, v.SessionsDropped, v.StateSent, v.StateApplied, v.StatePending, v.StateKept)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSELF\tREDIS\tLAST CONTACT\tLAG P50\tLAG P99\tAPPLIED")
	for _, n := range v.Nodes {
		self, lag50, lag99, applied := "-", "-", "-", "-"
		if n.Self {
			self = "yes"
		} else if n.Applied > 0 {
			lag50, lag99, applied = micros(n.LagP50), micros(n.LagP99), fmt.Sprint(n.Applied)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, self, upDown(n.Connected), ago(n.LastContact, now), lag50, lag99, applied)
	}
	return tw.Flush()
}

// clusterSummary is one line on this member's connection to Redis.
func clusterSummary(v *clusterView, now time.Time) string {
	s := fmt.Sprintf("cluster: node %s, Redis %s %s", v.Node, v.Redis, upDown(v.Connected))
	if v.Since != nil {
		s += " since " + ago(v.Since, now)
	}
	if !v.Connected && v.LastError != nil {
		s += " (" + *v.LastError + "); serving from the local state"
	}
	s += fmt.Sprintf(", %d nodes", len(v.Nodes))
	if v.LagSamples > 0 {
		// Measured over the most recent changes (lbd keeps 1024), which
		// the line says, so nobody reads them as all-time figures.
		s += fmt.Sprintf(", lag p50 %s p99 %s over the last %d changes", micros(v.LagP50), micros(v.LagP99), v.LagSamples)
	}
	return s
}

func upDown(on bool) string {
	if on {
		return "up"
	}
	return "down"
}

func micros(us int64) string { return (time.Duration(us) * time.Microsecond).String() }

// ago prints an RFC 3339 time of the reply as an age ("never" for null).
func ago(t *string, now time.Time) string {
	if t == nil {
		return "never"
	}
	at, err := time.Parse(time.RFC3339Nano, *t)
	if err != nil {
		return *t
	}
	return now.Sub(at).Round(100*time.Millisecond).String() + " ago"
}

// listCluster adds the cluster line under a full listing's table; a
// server without a cluster adds nothing.
func listCluster(w io.Writer, cn *conn) {
	v, _, err := fetchCluster(cn)
	if err != nil {
		return // best effort, like the metrics the table adds
	}
	fmt.Fprintln(w, clusterSummary(v, time.Now()))
}
