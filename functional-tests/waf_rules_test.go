package functionaltests

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	crs3Rules = "/usr/share/modsecurity-crs/rules"
	crs3Setup = "/etc/modsecurity/crs/crs-setup.conf"
)

// wafRuleSets are the rule sets compared: Debian's CRS 3.3 (what nginx
// and zproxy run on Debian) and CRS 4, the one lbd builds in ("@crs").
var wafRuleSets = []string{"crs3", "crs4"}

// buildWAFRules builds bench/wafrules, the writer of the rule files that
// the benchmark (bench/waf.sh) loads too.
func buildWAFRules(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wafrules")
	if out, err := exec.Command("go", "build", "-o", bin, "lbd/bench/wafrules").CombinedOutput(); err != nil {
		t.Fatalf("go build bench/wafrules: %v\n%s", err, out)
	}
	return bin
}

// writeWAFRules writes rule set set at paranoia level pl under dir and
// returns the main file, which both engines are given.
func writeWAFRules(t *testing.T, tool, dir, set string, pl int) string {
	t.Helper()
	out, err := exec.Command(tool, "-set", set, "-pl", strconv.Itoa(pl), "-out", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("wafrules -set %s -pl %d: %v\n%s", set, pl, err, out)
	}
	return strings.TrimSpace(string(out))
}
