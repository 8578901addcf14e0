package lbctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
)

// TestTemplateFuncs runs poundctl's template functions on generic JSON.
func TestTemplateFuncs(t *testing.T) {
	data, err := decodeGeneric([]byte(`{"n":3, "f":2.5, "big":17365828, "nil":null, "a":[1,2], "s":"x", "o":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, text, want string
	}{
		{name: "integers print in full", text: `{{.big}}`, want: "17365828"},
		{name: "exists present", text: `{{exists . "nil"}}`, want: "true"},
		{name: "exists absent", text: `{{exists . "zz"}}`, want: "false"},
		{name: "exists on non-object", text: `{{exists .a "x"}}`, want: "false"},
		{name: "typeof", text: `{{typeof .n}} {{typeof .nil}} {{typeof .a}} {{typeof .s}} {{typeof .o}} {{typeof .f}}`,
			want: "number null array string object number"},
		{name: "len of null", text: `{{len .nil}} {{len .a}} {{len .s}}`, want: "0 2 1"},
		{name: "integer arithmetic stays integer", text: `{{add .n 1}} {{sub .n 4}} {{mul .n 2}}`, want: "4 -1 6"},
		{name: "division is real", text: `{{div .n 2}} {{fdiv .f 2}}`, want: "1.5 1.25"},
		{name: "comparison with int64", text: `{{if gt .n 2}}yes{{end}}`, want: "yes"},
		{name: "milliseconds", text: `{{template "default.milliseconds" 12345678}}`, want: "12.35"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tm := template.Must(loadTemplates(""))
			template.Must(tm.New("t").Parse(tc.text))
			var b strings.Builder
			if err := tm.ExecuteTemplate(&b, "t", data); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// TestTemplateFile checks -t FILE (definitions added to the built-in
// ones, which they may redefine) and -T NAME.
func TestTemplateFile(t *testing.T) {
	sock, _ := poundServer(t, false)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mine := write("mine.tmpl", `{{define "mine"}}{{range $i, $l := .listeners}}{{$i}}={{$l.address}};{{end}}{{end}}`)
	redefine := write("redefine.tmpl", `{{define "default.backend"}}B{{.priority}}{{end}}`)
	broken := write("broken.tmpl", `{{define "x"}}{{if}}{{end}}`)
	cases := []struct {
		name   string
		args   []string
		out    string
		errHas string
	}{
		{name: "own template", args: []string{"-t", mine, "-T", "mine"}, out: "0=/run/lbd.sock;1=127.0.0.1:8080;"},
		{name: "redefined part of default", args: []string{"-t", redefine, "list", "/1/0"},
			out: "Service \"web\" active\n        0. B5\n        1. B5\n        2. B1\n     Session type: COOKIE\n       0. Session abc 1 2026-11-30T05:45:00.000000\n"},
		{name: "built-in by name", args: []string{"-T", "default.core", "core"}, out: coreText},
		{name: "undefined name", args: []string{"-T", "nope"}, errHas: "lbctl: template nope not defined\n"},
		{name: "missing file", args: []string{"-t", filepath.Join(dir, "none.tmpl")}, errHas: "can't open template file"},
		{name: "parse error", args: []string{"-t", broken}, errHas: "missing value for if"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(nil, append([]string{"lbctl", "-s", sock}, tc.args...)...)
			if tc.errHas != "" {
				if r.code != 1 || !strings.Contains(r.stderr, tc.errHas) {
					t.Errorf("got %d %q, want error %q", r.code, r.stderr, tc.errHas)
				}
				return
			}
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("got %d %q", r.code, r.stderr)
			}
			if r.stdout != tc.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, tc.out)
			}
		})
	}
}

// TestParseBackendMetrics reads per-backend samples by index and by name.
func TestParseBackendMetrics(t *testing.T) {
	text := `# TYPE pound_backend_requests counter
pound_backend_requests_total{listener="1",listener_name="main",service="0",service_name="we\"b",backend="2"} 42
pound_backend_response_time_seconds{listener="1",listener_name="main",service="0",service_name="we\"b",backend="2"} 0.25
pound_backend_requests_total{service="0",service_name="fallback",backend="0"} 7
pound_backend_state{listener="1",service="0",backend="2",state="alive"} 1
pound_listener_enabled{listener="1"} 1
broken{listener="1
# EOF
`
	m := parseBackendMetrics([]byte(text))
	cases := []struct {
		name, key string
		reqs      int64
		rt        float64
	}{
		{name: "by index", key: "1/0/2", reqs: 42, rt: 0.25},
		{name: "by names", key: `main/we"b/2`, reqs: 42, rt: 0.25},
		{name: "mixed", key: `1/we"b/2`, reqs: 42, rt: 0.25},
		{name: "global service", key: "-/fallback/0", reqs: 7, rt: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := m[tc.key]
			if v == nil || v.requests == nil || *v.requests != tc.reqs {
				t.Fatalf("%s: %+v", tc.key, v)
			}
			if (tc.rt < 0) != (v.respTime == nil) || (v.respTime != nil && *v.respTime != tc.rt) {
				t.Errorf("response time %v, want %v", v.respTime, tc.rt)
			}
		})
	}
	if len(m) != 6 { // 2 backends, each under index and name keys
		t.Errorf("%d keys, want 6: %v", len(m), m)
	}
}
