package rules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lbd/explain"
)

// stepLine summarises a step as "test|action: description [subject]
// matched/holds" for the table below.
func stepLine(s explain.Step) string {
	var b strings.Builder
	if s.Action != "" {
		return "do " + s.Action
	}
	b.WriteString(s.Test)
	if s.Subject != nil {
		b.WriteString(" [" + *s.Subject + "]")
	}
	if s.Matched != nil && *s.Matched {
		b.WriteString(" matched")
	} else {
		b.WriteString(" no match")
	}
	if s.Not {
		b.WriteString(" not")
	}
	if s.Holds != nil && *s.Holds {
		b.WriteString(" => holds")
	} else {
		b.WriteString(" => fails")
	}
	for _, e := range s.Eval {
		b.WriteString(" {" + stepLine(e) + "}")
	}
	return b.String()
}

func TestSelectTrace(t *testing.T) {
	cases := []struct {
		name    string
		global  string
		conds   string
		line    string
		headers []string
		want    bool
		steps   []string
	}{
		{name: "no conditions", line: "GET /", want: true},
		{name: "one url condition", conds: `URL "^/api/"`, line: "GET /api/x?q=1", want: true,
			steps: []string{`url re "^/api/" [/api/x?q=1] matched => holds`}},
		{name: "and stops at the first failure", conds: "Path \"^/a\"\nMethod \"^POST$\"\nHost \"x.org\"", line: "GET /a",
			want: false, steps: []string{`path re "^/a" [/a] matched => holds`, `method re "^POST$" [GET] no match => fails`}},
		{name: "not inverts", conds: `Not Path -beg "/admin"`, line: "GET /admin/x", want: false,
			steps: []string{`path beg "/admin" [/admin/x] matched not => fails`}},
		{name: "or stops at the first success", conds: "Match OR\n Path \"^/a\"\n Path \"^/b\"\n Path \"^/c\"\nEnd", line: "GET /b",
			want: true, steps: []string{`path re "^/a" [/b] no match => fails`, `path re "^/b" [/b] matched => holds`}},
		{name: "named header without the header", conds: `Header "X-A" "."`, line: "GET /", want: false,
			steps: []string{`header "X-A" re "." icase no match => fails`}},
		{name: "query parameter", conds: `QueryParam "id" -exact "7"`, line: "GET /?a=1&id=7", want: true,
			steps: []string{`param "id" exact "7" [7] matched => holds`}},
		{name: "acl names the client", conds: "ACL\n \"10.0.0.0/8\"\nEnd", line: "GET /", want: false,
			steps: []string{`acl [10.0.0.0/8] [127.0.0.1] no match => fails`}},
		{name: "string match shows the expansion", conds: "Path \"^/([^/]+)\"\nStringMatch \"$1-$1\" \"^x_-x_$\"", line: "GET /x_/y",
			want: true, steps: []string{`path re "^/([^/]+)" [/x_/y] matched => holds`, `string "$1-$1" re "^x_-x_$" [x_-x_] matched => holds`}},
		{name: "eval shows the detached condition once", global: "Condition \"c\" or\n Path \"^/a\"\n Path \"^/b\"\nEnd",
			conds: "Eval \"c\"\nEval \"c\"", line: "GET /b", want: true,
			steps: []string{`eval "c" matched => holds {path re "^/a" [/b] no match => fails} {path re "^/b" [/b] matched => holds}`,
				`eval "c" matched => holds`}},
	}
	var st, real State
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := compileFirst(t, wrap(tc.global, "", tc.conds))
			request(&st, p.env, "127.0.0.1", tc.line, tc.headers...)
			got, steps, err := p.sel.SelectTrace(&st)
			if err != nil {
				t.Fatal(err)
			}
			request(&real, p.env, "127.0.0.1", tc.line, tc.headers...)
			if want, err := p.sel.Select(&real); err != nil || want != got {
				t.Fatalf("SelectTrace = %v, Select = %v, %v: the two evaluators disagree", got, want, err)
			}
			if got != tc.want {
				t.Fatalf("SelectTrace = %v, want %v", got, tc.want)
			}
			var lines []string
			for _, s := range steps {
				lines = append(lines, stepLine(s))
			}
			if strings.Join(lines, "\n") != strings.Join(tc.steps, "\n") {
				t.Fatalf("steps:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(tc.steps, "\n"))
			}
		})
	}
}

// TestTraceNamesPositions checks that each step names where its
// condition is written.
func TestTraceNamesPositions(t *testing.T) {
	p := compileFirst(t, wrap("", "", "Path \"^/a\"\nNot Header \"X-B\" \"1\""))
	var st State
	request(&st, p.env, "127.0.0.1", "GET /a")
	_, steps, err := p.sel.SelectTrace(&st)
	if err != nil {
		t.Fatal(err)
	}
	var pos []string
	for _, s := range steps {
		pos = append(pos, s.Pos)
	}
	// wrap puts the service statements from line 5 on.
	if want := []string{"t.cfg:5.1-10", "t.cfg:6.1-20"}; strings.Join(pos, " ") != strings.Join(want, " ") {
		t.Fatalf("positions %q, want %q", pos, want)
	}
}

// TestRewriteTrace checks that a traced rewrite applies the same changes
// as the real one and lists the branch taken.
func TestRewriteTrace(t *testing.T) {
	src := wrap("", "", "Rewrite\n Path \"^/old/(.*)\"\n SetPath \"/new/$1\"\n SetHeader \"X-Was: old\"\nElse\n SetHeader \"X-Was: other\"\nEnd")
	p := compileFirst(t, src)
	var st, real State
	request(&st, p.env, "127.0.0.1", "GET /old/x?q")
	steps, err := p.req.RewriteTrace(&st, &st.Req)
	if err != nil {
		t.Fatal(err)
	}
	request(&real, p.env, "127.0.0.1", "GET /old/x?q")
	if err := p.req.Rewrite(&real, &real.Req); err != nil {
		t.Fatal(err)
	}
	if string(st.Req.URL) != string(real.Req.URL) || lines(&st.Req) != lines(&real.Req) {
		t.Fatalf("traced rewrite gave %s %s, the real one %s %s", st.Req.URL, lines(&st.Req), real.Req.URL, lines(&real.Req))
	}
	var got []string
	for _, s := range steps {
		got = append(got, stepLine(s))
	}
	want := []string{`path re "^/old/(.*)" [/old/x] matched => holds`, `do set_path "/new/$1"`, `do set_header "X-Was: old"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTraceTBFTakesNoToken checks that tracing a TBF condition reads the
// bucket without taking a token: after any number of traces the real
// evaluator still gets the whole burst.
func TestTraceTBFTakesNoToken(t *testing.T) {
	p := compileFirst(t, wrap("", "", `TBF "k" 1/60s 2`))
	var st State
	for i := 0; i < 5; i++ {
		request(&st, p.env, "127.0.0.1", "GET /")
		ok, steps, err := p.sel.SelectTrace(&st)
		if err != nil || !ok {
			t.Fatalf("trace %d = %v, %v", i, ok, err)
		}
		if !strings.HasPrefix(steps[0].Detail, "2 token(s)") {
			t.Fatalf("trace %d detail %q, want 2 tokens", i, steps[0].Detail)
		}
	}
	for i, want := range []bool{true, true, false} {
		request(&st, p.env, "127.0.0.1", "GET /")
		if ok, err := p.sel.Select(&st); err != nil || ok != want {
			t.Fatalf("real select %d = %v, %v; want %v", i, ok, err, want)
		}
	}
	request(&st, p.env, "127.0.0.1", "GET /")
	ok, steps, err := p.sel.SelectTrace(&st)
	if err != nil || ok || !strings.HasPrefix(steps[0].Detail, "0 token(s)") {
		t.Fatalf("trace of an empty bucket = %v, %q, %v", ok, steps[0].Detail, err)
	}
}

// TestTraceBasicAuth checks the user shown and that a traced check fills
// no cache entry (the real check afterwards still runs the hash).
func TestTraceBasicAuth(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(pw, []byte("bob:guessMe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := compileFirst(t, wrap("", "", `BasicAuth "`+pw+`"`))
	var st State
	request(&st, p.env, "127.0.0.1", "GET /", basic("bob:guessMe"))
	ok, steps, err := p.sel.SelectTrace(&st)
	if err != nil || !ok {
		t.Fatalf("trace = %v, %v", ok, err)
	}
	if steps[0].Subject == nil || *steps[0].Subject != "user bob" {
		t.Fatalf("subject %v, want user bob", steps[0].Subject)
	}
	js, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "guessMe") {
		t.Fatalf("the trace shows the password: %s", js)
	}
}

// TestACLDecisionsCounted: a real selection counts the ACL's decision
// (in the list or not), a traced one (the route dry run) counts nothing.
func TestACLDecisionsCounted(t *testing.T) {
	tests := []struct {
		name           string
		client         string
		trace          bool
		match, nomatch uint64
	}{
		{name: "client in the list", client: "192.0.2.7", match: 1},
		{name: "client not in the list", client: "198.51.100.1", nomatch: 1},
		{name: "a trace counts nothing", client: "192.0.2.7", trace: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadCfg(t, wrap("", "", "ACL\n \"192.0.2.0/24\"\nEnd"))
			env, err := NewEnv(cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Listeners[0].Services[0]
			sel, err := env.CompileSelect(s.Conditions)
			if err != nil {
				t.Fatal(err)
			}
			var st State
			request(&st, env, tc.client, "GET /")
			if tc.trace {
				_, _, err = sel.SelectTrace(&st)
			} else {
				_, err = sel.Select(&st)
			}
			if err != nil {
				t.Fatal(err)
			}
			if m, n := s.Conditions[0].Rare().ACL.Decisions(); m != tc.match || n != tc.nomatch {
				t.Errorf("match %d nomatch %d, want %d and %d", m, n, tc.match, tc.nomatch)
			}
		})
	}
}
