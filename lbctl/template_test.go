package lbctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	mine := write("mine.tmpl", `{{define "mine"}}{{range $i, $l = .listeners}}{{$i}}={{$l.address}};{{end}}{{end}}`)
	partial := write("partial.tmpl", `{{define "default.backend"}}B{{.priority}}{{end}}`)
	// The style of Pound's own template files: parts defined by blocks on
	// first use inside "default", comments after a space with trim markers.
	blocks := write("blocks.tmpl", `{{define "default" -}}
  {{range $i, $l = .listeners -}}
    {{$i}}: {{block "lst" $l}}{{.address}}{{range .services}} [{{block "svc" .}}{{or .name "-"}}{{end}}]{{end}}{{end}}
  {{end}}{{ /* range */ -}}
  {{block "svc" (index .services 0)}}
{{end}}`) // "svc" is defined by then: that block has no body and {{end}} ends "default"
	broken := write("broken.tmpl", `{{define "x"}}{{nosuch}}{{end}}`)
	cases := []struct {
		name   string
		args   []string
		out    string
		errHas string
	}{
		{name: "own template", args: []string{"-t", mine, "-T", "mine"}, out: "0=/run/lbd.sock;1=127.0.0.1:8080;"},
		{name: "a file stands alone", args: []string{"-t", partial, "list", "/1/0"}, errHas: "lbctl: template default not defined\n"},
		{name: "a part of a file", args: []string{"-t", partial, "-T", "default.backend", "list", "/1/0/2"}, out: "B1"},
		{name: "blocks and comments", args: []string{"-t", blocks, "list"},
			out: "0: /run/lbd.sock [-]\n  1: 127.0.0.1:8080 [web] [-]\n  fallback\n"},
		{name: "built-in by name", args: []string{"-T", "default.core", "core"}, out: coreText},
		{name: "undefined name", args: []string{"-T", "nope"}, errHas: "lbctl: template nope not defined\n"},
		{name: "missing file", args: []string{"-t", filepath.Join(dir, "none.tmpl")}, errHas: "can't open template file"},
		{name: "parse error", args: []string{"-t", broken}, errHas: "lbctl: " + broken + ":1:17: no such function: nosuch\n"},
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
				t.Errorf("stdout:\n%s\nwant:\n%s\n(%q)", r.stdout, tc.out, r.stdout)
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
pound_backend_requests_total{listener="2",service="0",service_name="a\\b\nc\d",backend="1",backend="3"} 5
pound_backend_state{listener="1",service="0",backend="2",state="alive"} 1
pound_listener_enabled{listener="1"} 1
broken{listener="1
# EOF
` + "pound_backend_requests_total{listener=\"3\",service=\"1\",backend=\"0\"} 9\r\n"
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
		{name: "escapes, the last of a label", key: "2/a\\b\ncd/3", reqs: 5, rt: -1},
		{name: "CRLF", key: "3/1/0", reqs: 9, rt: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := m[metricKey(strings.Split(tc.key, "/"))]
			if v == nil || v.requests == nil || *v.requests != tc.reqs {
				t.Fatalf("%s: %+v", tc.key, v)
			}
			if (tc.rt < 0) != (v.respTime == nil) || (v.respTime != nil && *v.respTime != tc.rt) {
				t.Errorf("response time %v, want %v", v.respTime, tc.rt)
			}
		})
	}
	if len(m) != 9 { // 4 backends, under index and name keys where they have names
		t.Errorf("%d keys, want 9: %v", len(m), m)
	}
}

// TestTemplateSearch checks where the template file comes from: the
// search path ($POUND_TMPL_PATH, else TemplatePath, else
// ~/.poundctl.tmpl and lbd's data directories), poundctl.tmpl found
// there, and the built-in templates when there is none.
func TestTemplateSearch(t *testing.T) {
	sock, _ := poundServer(t, false)
	home, dirA, dirB := t.TempDir(), t.TempDir(), t.TempDir()
	say := func(what string) string { return `{{define "default"}}` + what + `{{end}}` }
	writeFile(t, dirA, "poundctl.tmpl", say("A"))
	writeFile(t, dirB, "poundctl.tmpl", say("B"))
	writeFile(t, dirB, "other.tmpl", say("B-other"))
	homeTmpl := t.TempDir()
	writeFile(t, homeTmpl, ".poundctl.tmpl", say("home"))
	conf := func(text string) string { return writeFile(t, t.TempDir(), "rc", "URL \""+sock+"\"\n"+text) }
	plain := conf("")
	withPath := conf("TemplatePath \"" + dirB + "\"\n")
	withFile := conf("TemplateFile \"other.tmpl\"\nTemplatePath \"" + dirA + "\"\n")
	cases := []struct {
		name   string
		env    map[string]string
		argv   []string
		want   string
		errHas string
	}{
		{name: "POUND_TMPL_PATH: first element that has it", env: map[string]string{"POUND_TMPL_PATH": "/nonexistent:" + dirA + ":" + dirB},
			want: "A"},
		{name: "POUND_TMPL_PATH wins over TemplatePath", env: map[string]string{"POUND_TMPL_PATH": dirA, "POUNDCTL_CONF": withPath}, want: "A"},
		{name: "TemplatePath", env: map[string]string{"POUNDCTL_CONF": withPath}, want: "B"},
		{name: "TemplateFile in POUND_TMPL_PATH", env: map[string]string{"POUNDCTL_CONF": withFile, "POUND_TMPL_PATH": dirB}, want: "B-other"},
		{name: "TemplateFile not in TemplatePath", env: map[string]string{"POUNDCTL_CONF": withFile},
			errHas: "poundctl: template file other.tmpl not found in " + dirA + "\n"},
		{name: "~/.poundctl.tmpl by default", env: map[string]string{"HOME": homeTmpl}, want: "home"},
		{name: "empty POUND_TMPL_PATH: built-in templates", env: map[string]string{"HOME": homeTmpl, "POUND_TMPL_PATH": ""}, want: "Service \"web\" active"},
		{name: "nothing found: built-in templates", env: map[string]string{"HOME": home}, want: "Service \"web\" active"},
		{name: "-t is not looked up", env: map[string]string{"POUND_TMPL_PATH": dirA}, argv: []string{"-t", "poundctl.tmpl"},
			errHas: "can't open template file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.env["POUNDCTL_CONF"]; !ok {
				tc.env["POUNDCTL_CONF"] = plain
			}
			argv := append(append([]string{"poundctl"}, tc.argv...), "list", "/1/0")
			r := run(tc.env, argv...)
			if tc.errHas != "" {
				if r.code != 1 || !strings.Contains(r.stderr, tc.errHas) {
					t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, tc.errHas)
				}
				return
			}
			if r.code != 0 || !strings.HasPrefix(r.stdout, tc.want) {
				t.Errorf("exit %d, stdout %q, want %q; stderr %q", r.code, r.stdout, tc.want, r.stderr)
			}
		})
	}
}
