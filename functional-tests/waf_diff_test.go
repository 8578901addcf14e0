package functionaltests

// TestWAFDifferential: lbd's WAF (Coraza) must decide as libmodsecurity
// 3 does. Every request of testdata/waf/corpus.jsonl goes, byte for byte
// the same, to nginx+ModSecurity and to lbd, both loading the same rule
// files (bench/wafrules writes them: Debian's CRS 3.3 and lbd's built-in
// CRS 4) at paranoia levels 1 and 2; the verdicts (reached the backend or
// not) must agree on at least 99 % of the corpus in each run, and every
// disagreement is printed with the rule ids each engine logged for it.
// bench/COMPAT.md ("WAF differential") explains them.
//
//	make wafdiff     (it also runs in make test)
//	go test -tags lua -run TestWAFDifferential -v ./functional-tests/
//
// WAF_DIFF_ONLY=<regexp> restricts the run to matching ids (the
// threshold then applies to that subset); WAF_DIFF_PL=1 runs one level,
// WAF_DIFF_SET=crs4 one rule set; WAF_DIFF_VERBOSE=1 logs every request.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The verdict is whether the request reached the backend, which answers
// 200 to everything: "block" is any other answer (the WAF's 403, its 400
// for a body it cannot parse, or a refusal by the proxy itself), "pass" a
// 2xx or 3xx. Statuses that differ within one verdict are listed apart.
const (
	vBlock = "block"
	vPass  = "pass"
)

func classify(status int) string {
	if status >= 200 && status < 400 {
		return vPass
	}
	return vBlock
}

// ruleIDRe finds the rule ids in ModSecurity's and Coraza's log lines.
var ruleIDRe = regexp.MustCompile(`\[id "(\d+)"\]`)

// ruleIDs returns the distinct rule ids logged in s, sorted.
func ruleIDs(s string) string {
	set := map[string]bool{}
	for _, m := range ruleIDRe.FindAllStringSubmatch(s, -1) {
		set[m[1]] = true
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return strings.Join(ids, " ")
}

// wafSide is one proxy under test and a way to read what it logged since
// the last call (requests are sent one at a time, so that is this
// request's log).
type wafSide struct {
	name string
	addr string
	tail func() string
}

// fileTail reads a file from where the previous call stopped (nginx's
// error log grows by kilobytes a request: reading it whole each time
// would make the run quadratic).
func fileTail(path string) func() string {
	var off int64
	return func() string {
		f, err := os.Open(path)
		if err != nil {
			return ""
		}
		defer f.Close()
		b, err := io.ReadAll(io.NewSectionReader(f, off, 1<<40))
		if err != nil {
			return ""
		}
		off += int64(len(b))
		return string(b)
	}
}

// bufTail does the same for a process's captured output.
func bufTail(b *syncBuffer) func() string {
	off := 0
	return func() string {
		s := b.String()
		if len(s) < off {
			return ""
		}
		out := s[off:]
		off = len(s)
		return out
	}
}

type wafResult struct {
	e       wafEntry
	req     []byte
	status  [2]int
	rules   [2]string
	verdict [2]string
	agree   bool
}

func TestWAFDifferential(t *testing.T) {
	nginx := wafPrereqs(t)
	corpus := loadWAFCorpus(t)
	if len(corpus) < 500 {
		t.Fatalf("corpus has %d requests, want at least 500", len(corpus))
	}
	if re := os.Getenv("WAF_DIFF_ONLY"); re != "" {
		only := regexp.MustCompile(re)
		var sub []wafEntry
		for _, e := range corpus {
			if only.MatchString(e.ID) {
				sub = append(sub, e)
			}
		}
		corpus = sub
		if len(corpus) == 0 {
			t.Fatalf("WAF_DIFF_ONLY=%q matches no corpus id", re)
		}
	}
	levels := []int{1, 2}
	if s := os.Getenv("WAF_DIFF_PL"); s != "" {
		pl, err := strconv.Atoi(s)
		if err != nil || pl < 1 || pl > 4 {
			t.Fatalf("WAF_DIFF_PL=%q: want 1..4", s)
		}
		levels = []int{pl}
	}
	sets := wafRuleSets
	if s := os.Getenv("WAF_DIFF_SET"); s != "" {
		sets = []string{s}
	}
	// One cheap backend for both proxies: 200 and a short body for all.
	be := startBackend(t, "127.0.0.1", "waf-backend", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	}))
	tool := buildWAFRules(t)
	for _, set := range sets {
		for _, pl := range levels {
			t.Run(fmt.Sprintf("%s/PL%d", set, pl), func(t *testing.T) {
				rules := writeWAFRules(t, tool, t.TempDir(), set, pl)
				runWAFDiff(t, wafSidesFor(t, nginx, rules, be), corpus, pl)
			})
		}
	}
}

// wafSidesFor starts nginx+ModSecurity and lbd on the same rules.
func wafSidesFor(t *testing.T, nginx, rules string, be *backend) [2]wafSide {
	ng := startNginxWAF(t, nginx, rules, be.addr)
	// xHTTP 4: every method lbd knows, so that lbd's method filter does
	// not answer before the WAF (nginx has none).
	lbd := startLBD(t, fmt.Sprintf(`Daemon 0
Alive 30
TimeOut 10
Client 10
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	xHTTP 4
	WafRules "%s"
	Service
%s	End
End
`, rules, be.block()))
	return [2]wafSide{
		{name: "nginx+modsecurity", addr: ng.addr, tail: fileTail(ng.errLog)},
		{name: "lbd+coraza", addr: lbd.addr, tail: bufTail(lbd.out)},
	}
}

// runWAFDiff sends the corpus, one request at a time, to both sides at
// once, then sends each request whose verdicts differ again, alone, to
// read the rule ids each side logs for it (lbd logs some of them after
// answering, so they are read once its log is quiet), and reports.
func runWAFDiff(t *testing.T, sides [2]wafSide, corpus []wafEntry, pl int) {
	deadline := time.Now().Add(4 * time.Minute)
	var results []wafResult
	for _, e := range corpus {
		if time.Now().After(deadline) {
			t.Fatalf("PL%d: out of time after %d of %d requests", pl, len(results), len(corpus))
		}
		req, err := e.raw()
		if err != nil {
			t.Fatal(err)
		}
		r := wafResult{e: e, req: req}
		var wg sync.WaitGroup
		for i := range sides {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.status[i] = exchange(sides[i].addr, req, e.Method, 15*time.Second)
				r.verdict[i] = classify(r.status[i])
			}()
		}
		wg.Wait()
		r.agree = r.verdict[0] == r.verdict[1]
		results = append(results, r)
	}
	for i := range results {
		if r := &results[i]; !r.agree || r.status[0] != r.status[1] {
			for j, s := range sides {
				s.tail()
				exchange(s.addr, r.req, r.e.Method, 15*time.Second)
				r.rules[j] = ruleIDs(quietTail(s.tail))
			}
		}
	}
	reportWAFDiff(t, pl, sides, results)
}

// quietTail collects what tail returns until nothing new came for 200 ms
// (2 s at most).
func quietTail(tail func() string) string {
	var b strings.Builder
	quiet := time.Now()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && time.Since(quiet) < 200*time.Millisecond; {
		time.Sleep(20 * time.Millisecond)
		if s := tail(); s != "" {
			b.WriteString(s)
			quiet = time.Now()
		}
	}
	return b.String()
}

// reportWAFDiff prints the score, a per-category table and every
// disagreement, and fails below 99 % agreement.
func reportWAFDiff(t *testing.T, pl int, sides [2]wafSide, results []wafResult) {
	type tally struct{ n, agree, block [2]int }
	cats := map[string]*tally{}
	agree := 0
	var lines, same []string
	for _, r := range results {
		c := cats[r.e.Category]
		if c == nil {
			c = &tally{}
			cats[r.e.Category] = c
		}
		c.n[0]++
		for i := range sides {
			if r.verdict[i] == vBlock {
				c.block[i]++
			}
		}
		if r.agree {
			agree++
			c.agree[0]++
			if r.status[0] != r.status[1] {
				same = append(same, fmt.Sprintf("  %-22s %-6s %s %d [%s]  %s %d [%s]", r.e.ID, r.e.Category,
					sides[0].name, r.status[0], r.rules[0], sides[1].name, r.status[1], r.rules[1]))
			}
		} else {
			lines = append(lines, fmt.Sprintf("  %-22s %-6s %s %d [%s]  %s %d [%s]", r.e.ID, r.e.Category,
				sides[0].name, r.status[0], r.rules[0], sides[1].name, r.status[1], r.rules[1]))
		}
		if os.Getenv("WAF_DIFF_VERBOSE") != "" {
			t.Logf("%s %d [%s] / %d [%s]", r.e.ID, r.status[0], r.rules[0], r.status[1], r.rules[1])
		}
	}
	names := make([]string, 0, len(cats))
	for k := range cats {
		names = append(names, k)
	}
	sort.Strings(names)
	var tab strings.Builder
	fmt.Fprintf(&tab, "  %-8s %5s %7s %13s %13s\n", "category", "n", "agree", "stopped nginx", "stopped lbd")
	for _, k := range names {
		c := cats[k]
		fmt.Fprintf(&tab, "  %-8s %5d %7d %13d %13d\n", k, c.n[0], c.agree[0], c.block[0], c.block[1])
	}
	pct := 100 * float64(agree) / float64(len(results))
	t.Logf("PL%d: %d/%d agree (%.2f %%)\n%s", pl, agree, len(results), pct, tab.String())
	if len(lines) > 0 {
		t.Logf("PL%d disagreements (id, category, status [rule ids] per engine):\n%s", pl, strings.Join(lines, "\n"))
	}
	if len(same) > 0 {
		t.Logf("PL%d same verdict, other status:\n%s", pl, strings.Join(same, "\n"))
	}
	if pct < 99 {
		t.Errorf("PL%d: agreement %.2f %% (%d of %d differ), want at least 99 %%", pl, pct, len(results)-agree, len(results))
	}
}
