package service

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"lbd/config"
	"lbd/rules"
)

// The routing index must change which services a router tries, never
// which one it picks nor anything the request carries afterwards. These
// tests route generated requests through generated configurations twice,
// with the index and with plain in-order evaluation, and compare every
// observable outcome.

// hostConds, urlConds ... are condition lines the generator draws from:
// every kind the index files (exact, prefix, suffix, literal regexes,
// either case), kinds it must offer always (-contain, classes, PCRE,
// -decode), and conditions on other parts of the request.
var (
	hostConds = []string{
		`Host "a.example"`, `Host "A.Example"`, `Host -case "A.example"`, `Host "www.a.example"`,
		`Host -re "^(www\\.)?a\\.example$"`, `Host -end ".example"`, `Host -end "b.example"`,
		`Host -beg "www."`, `Host -contain "b."`, `Host -re "example"`, `Host -re "^[ab]\\.example$"`,
		`Host -icase -re "^A\\.EXAMPLE$"`, `Host -re "(?i)^kEy\\.test$"`, `Host -re "\\.test$"`,
		`Host -exact ""`, `Host -pcre "^(?=a)a\\.example$"`, `Host -re "^a\\.example(:8080)?$"`,
		`Host -re "^www\\.[a-z]+\\.example$"`, `Host -icase -re "^KEY\\..*"`,
	}
	urlConds = []string{
		`URL "^/app1/"`, `URL "^/app1"`, `URL "^/app"`, `URL "^/(app1|app2)/"`, `URL "/app"`,
		`URL -exact "/app1/x"`, `URL -beg "/app2"`, `URL -end ".html"`, `URL "\\.html$"`,
		`URL -icase "^/APP1"`, `URL "^/app1/x\\?q=1$"`, `URL -beg ""`, `URL "^/s(k|s)"`,
		`URL -icase "^/sk"`, `URL "^/app[0-9]+/"`, `URL -icase "^/SK[0-9]*"`, `URL "^/app1/.*\\.html$"`,
		`URL "(?m)^/app"`, `URL "^(/app2|/sk)"`, `URL "^/ap+"`, `URL "p[0-9]+/"`,
	}
	pathConds = []string{
		`Path "^/app1/x$"`, `Path -beg "/app2"`, `Path -end ".html"`, `Path -decode -beg "/app1"`,
		`Path -exact "/"`, `Path -icase -exact "/APP1/X"`, `Path "^/app[12]/x$"`, `Path -icase "^/App1/.+"`,
	}
	otherConds = []string{
		`Header "X-K" "v1"`, `Header "^X-K: v[12]$"`, `Header "X-K" -exact "v2"`, `Header "x-k" "^(v1|V2)$"`,
		`Header "X-K" -icase -exact "V1"`, `Header "X-K" -beg "v"`, `Header "X-Other" -exact "v1"`, `Header "X-K" -re "(?i)^sk$"`, `Method "^GET$"`,
		`Method -exact "POST"`, `QueryParam "q" "1"`, `StringMatch "%[host]" "^(a|b)"`,
		`Eval "d1"`, `HeadRequire "X-K"`, `Query -contain "q="`,
	}
	rewriteLines = []string{
		`SetHeader "Host: b.example"`, `SetHeader "Host: a.example"`, `SetURL "/app2/y"`,
		`SetURL "/app1/x"`, `SetHeader "X-K: v1"`, `DeleteHeader "X-K"`,
		"Rewrite\n\t\t\tURL \"^/app1/(.*)\"\n\t\t\tSetURL \"/app2/$1\"\n\t\tElse\n\t\t\tHost -end \".example\"\n\t\t\tSetHeader \"X-K: v2\"\n\t\tEnd",
	}
	reqHosts = []string{"a.example", "A.EXAMPLE", "www.a.example", "b.example", "x.b.example", "c.test",
		"key.test", "\u212aey.test", "a.example:8080", "", "-", "B.Example", "\u017fk"}
	reqURLs = []string{"/app1/x", "/app1", "/APP1/X", "/app2/x?q=1", "/app1/x?q=1", "/index.html",
		"/app%31/x", "/", "/app12/", "/sk", "/SK", "/app1/x.html", "*"}
)

// genCond writes one condition, possibly a Not or a Match group.
func genCond(r *rand.Rand, b *strings.Builder, indent string, depth int) {
	switch n := r.IntN(20); {
	case n < 2 && depth < 2:
		op := [...]string{"OR", "AND", ""}[r.IntN(3)]
		not := ""
		if r.IntN(5) == 0 {
			not = "Not "
		}
		fmt.Fprintf(b, "%s%sMatch %s\n", indent, not, op)
		for range r.IntN(4) {
			genCond(r, b, indent+"\t", depth+1)
		}
		fmt.Fprintf(b, "%sEnd\n", indent)
	default:
		var pool []string
		switch k := r.IntN(10); {
		case k < 3:
			pool = hostConds
		case k < 6:
			pool = urlConds
		case k < 7:
			pool = pathConds
		default:
			pool = otherConds
		}
		not := ""
		if r.IntN(8) == 0 {
			not = "Not "
		}
		fmt.Fprintf(b, "%s%s%s\n", indent, not, pool[r.IntN(len(pool))])
	}
}

// genConfig writes a Pound configuration with one listener of n
// services: some disabled, some FallThrough with request rules that
// change what later services (and the index) look at.
func genConfig(r *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteString("Condition \"d1\" or\n\tHost -end \".test\"\n\tURL \"^/app2\"\nEnd\n")
	b.WriteString("ListenHTTP\n\tAddress 127.0.0.1\n\tPort 23001\n")
	for i := range n {
		fmt.Fprintf(&b, "\tService \"s%d\"\n", i)
		if r.IntN(8) == 0 {
			b.WriteString("\t\tDisabled 1\n")
		}
		for range r.IntN(4) {
			genCond(r, &b, "\t\t", 0)
		}
		if r.IntN(4) == 0 {
			b.WriteString("\t\tFallThrough\n")
			for range r.IntN(3) {
				fmt.Fprintf(&b, "\t\t%s\n", rewriteLines[r.IntN(len(rewriteLines))])
			}
		}
		if r.IntN(6) == 0 {
			b.WriteString("\t\tLogSuppress info\n")
		}
		b.WriteString("\t\tError 404\n\tEnd\n")
	}
	b.WriteString("End\n")
	return b.String()
}

// genRequest fills st.Req with a request drawn from the vocabulary.
func genRequest(r *rand.Rand, st *rules.State, detached int) string {
	st.Begin(netip.MustParseAddr("10.0.0.1"), detached)
	st.Req.Method = []byte([...]string{"GET", "POST", "HEAD"}[r.IntN(3)])
	st.Req.URL = []byte(reqURLs[r.IntN(len(reqURLs))])
	desc := string(st.Req.Method) + " " + string(st.Req.URL)
	if h := reqHosts[r.IntN(len(reqHosts))]; h != "-" {
		st.Req.Lines = append(st.Req.Lines, []byte("Host: "+h))
		desc += " Host: " + h
	}
	if r.IntN(3) == 0 {
		for range 1 + r.IntN(2) {
			line := [...]string{"X-K: v1", "X-K: v2", "x-k:v1 ", "Host: b.example", "X-K:\tV2\t", "X-K:", "X-Other: V1", "X-K: \u017fk"}[r.IntN(8)]
			st.Req.Lines = append(st.Req.Lines, []byte(line))
			desc += " | " + line
		}
	}
	return desc
}

// outcome is everything routing leaves behind that a later stage sees.
func outcome(env *rules.Env, r *Router, st *rules.State) string {
	s, err := r.Route(st)
	idx := -1
	for i, x := range r.Services {
		if x == s {
			idx = i
		}
	}
	// The submatches of every condition that matched, in order: what a
	// backend's or a rule's $N refers to.
	refs, _, refErr := st.Expand(env, "$0|$0(1)|$0(2)|$0(3)|$1(0)|$1(1)", nil, "refs")
	return fmt.Sprintf("service %d err %v suppress %d url %q lines %q refs %q %v",
		idx, err, st.LogSuppress, st.Req.URL, st.Req.Lines, refs, refErr)
}

// loadRouters builds the services of a generated configuration and two
// routers over them: plain, and indexed whatever their number.
func loadRouters(t testing.TB, src string) (plain, indexed *Router, env *rules.Env, ok bool) {
	cfg, _, err := config.LoadBytes("gen.cfg", []byte(src), config.LoadOptions{NoDNS: true})
	if err != nil {
		return nil, nil, nil, false // a combination the parser refuses (none is expected often)
	}
	env, err = rules.NewEnv(cfg)
	if err != nil {
		t.Fatalf("env: %v\n%s", err, src)
	}
	var svcs []*Service
	for _, sc := range cfg.Listeners[0].Services {
		s, err := New(sc, Options{Env: env})
		if err != nil {
			t.Fatalf("service: %v\n%s", err, src)
		}
		svcs = append(svcs, s)
	}
	defer func(old int) { IndexMin = old }(IndexMin)
	IndexMin = 0
	ix := NewRouter(svcs)
	return &Router{Services: svcs}, &ix, env, true
}

// TestIndexedRouteMatchesInOrder is the differential test: 10,000
// configurations of 1 to 40 services, 20 requests each, some services
// disabled or enabled between requests.
func TestIndexedRouteMatchesInOrder(t *testing.T) {
	configs := 10000
	if testing.Short() {
		configs = 1000
	}
	r := rand.New(rand.NewPCG(36, 1))
	var stA, stB rules.State
	loaded, indexedRouters, skipped := 0, 0, 0
	for c := 0; c < configs; c++ {
		src := genConfig(r, 1+r.IntN(40))
		plain, indexed, env, ok := loadRouters(t, src)
		if !ok {
			continue
		}
		loaded++
		if indexed.Indexed() {
			indexedRouters++
		}
		for q := 0; q < 20; q++ {
			if r.IntN(10) == 0 {
				s := plain.Services[r.IntN(len(plain.Services))]
				s.SetEnabled(!s.Enabled())
			}
			seed := r.Uint64()
			desc := genRequest(rand.New(rand.NewPCG(seed, 2)), &stA, len(env.Detached))
			genRequest(rand.New(rand.NewPCG(seed, 2)), &stB, len(env.Detached))
			want, got := outcome(env, plain, &stA), outcome(env, indexed, &stB)
			if want != got {
				t.Fatalf("config %d request %q:\n in order: %s\n indexed:  %s\nconfig:\n%s", c, desc, want, got, src)
			}
			if q%5 == 0 {
				skipped += compareTraces(t, plain, indexed, seed, len(env.Detached), src)
			}
		}
	}
	// The generator must mostly produce loadable, indexable configurations,
	// or the comparison proves little.
	if loaded < configs*9/10 || indexedRouters < loaded/2 || skipped == 0 {
		t.Fatalf("only %d of %d configurations loaded, %d of them indexed, %d services skipped in traces",
			loaded, configs, indexedRouters, skipped)
	}
}

// compareTraces checks the explainer (lbctl route) with the index: the
// same verdicts as without it, except services it skipped, which
// without it are tried and do not match.
func compareTraces(t *testing.T, plain, indexed *Router, seed uint64, detached int, src string) (skipped int) {
	t.Helper()
	var stA, stB rules.State
	desc := genRequest(rand.New(rand.NewPCG(seed, 2)), &stA, detached)
	genRequest(rand.New(rand.NewPCG(seed, 2)), &stB, detached)
	sa, ta, errA := plain.RouteTrace(&stA)
	sb, tb, errB := indexed.RouteTrace(&stB)
	if sa != sb || fmt.Sprint(errA) != fmt.Sprint(errB) || len(ta) != len(tb) {
		t.Fatalf("request %q: traces choose %v (%v) and %v (%v)\n%s", desc, sa, errA, sb, errB, src)
	}
	for i := range ta {
		a, b := ta[i].Verdict, tb[i].Verdict
		if a != b && (b != "skipped" || a != "no match" || tb[i].Skipped == "") {
			t.Fatalf("request %q: service %d is %q in order, %q (%s) with the index\n%s", desc, i, a, b, tb[i].Skipped, src)
		}
		if b == "skipped" {
			skipped++
		}
	}
	return skipped
}

// FuzzIndexedRoute routes an arbitrary request (any bytes in the Host,
// the URL and one more header line) through a configuration generated
// from seed, with and without the index.
func FuzzIndexedRoute(f *testing.F) {
	seeds := []struct {
		seed           uint64
		n              uint8
		host, url, hdr string
	}{
		{1, 30, "a.example", "/app1/x", "X-K: v1"},
		{2, 12, "WWW.A.EXAMPLE", "/app2/x?q=1", ""},
		{3, 40, "\u212aey.test", "/SK", "Host: b.example"},
		{4, 25, "b.example:8080", "/app1/x.html", "x-k: v2"},
		{5, 3, "", "*", "X-K:"},
		{6, 39, "x.b.example", "/app%31/x", "X-K: v1"},
	}
	for _, s := range seeds {
		f.Add(s.seed, s.n, s.host, s.url, s.hdr)
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, host, url, hdr string) {
		src := genConfig(rand.New(rand.NewPCG(seed, 3)), 1+int(n)%40)
		plain, indexed, env, ok := loadRouters(t, src)
		if !ok {
			return
		}
		var stA, stB rules.State
		for _, st := range []*rules.State{&stA, &stB} {
			st.Begin(netip.MustParseAddr("10.0.0.1"), len(env.Detached))
			st.Req.Method, st.Req.URL = []byte("GET"), []byte(url)
			st.Req.Lines = append(st.Req.Lines, []byte("Host: "+host))
			if hdr != "" {
				st.Req.Lines = append(st.Req.Lines, []byte(hdr))
			}
		}
		if want, got := outcome(env, plain, &stA), outcome(env, indexed, &stB); want != got {
			t.Fatalf("host %q url %q header %q:\n in order: %s\n indexed:  %s\nconfig:\n%s", host, url, hdr, want, got, src)
		}
	})
}
