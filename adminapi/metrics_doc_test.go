package adminapi

import (
	"os"
	"strings"
	"testing"
)

// TestMetricFamiliesDocumented: every family the exposition can print is
// named in the METRICS section of lbd.cfg(5) (lbd_cluster_* as a group;
// counters as their _total samples, the name users query).
func TestMetricFamiliesDocumented(t *testing.T) {
	page, err := os.ReadFile("../man/lbd.cfg.5")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n.SH METRICS\n")
	if !ok {
		t.Fatal("lbd.cfg.5 has no METRICS section")
	}
	section, _, _ = strings.Cut(section, "\n.SH ")
	for _, f := range metricFamilies {
		t.Run(f.name, func(t *testing.T) {
			name := f.name
			if f.typ == "counter" && name != "pound_uptime" && name != "pound_queue_len" {
				name += "_total"
			}
			if !strings.Contains(section, name) {
				t.Errorf("%s (%s) is not documented in lbd.cfg(5) METRICS", name, f.typ)
			}
		})
	}
}
