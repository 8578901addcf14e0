package lbctl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeFile writes text to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParseCtlConfig checks the syntax of ~/.poundctl: a good file, then
// each error with its FILE:LINE message.
func TestParseCtlConfig(t *testing.T) {
	good := "# poundctl settings\n" +
		"url \"/run/lbd.sock\"   # trailing comment\n" +
		"CAFILE /etc/ssl/ca.pem\r\n" +
		"\tCAPath \"/etc/ssl/my certs\"\n" +
		"ClientCert \"/home/me/\\\"me\\\".pem\"\n" +
		"Verify off\n" +
		"TemplateFile \"my.tmpl\"\n" +
		"TemplateName brief\n" +
		"TemplatePath \"~/tmpl:/usr/share/lbd\"\n" +
		"\n" +
		"Server \"web\"\n" +
		"  URL \"https://web.example:8443/ctl\"\n" +
		"  Verify No\n" +
		"end\n" +
		"Server back\\slash\n" +
		"End\n"
	want := &ctlConfig{
		file: "rc",
		top: serverDefn{url: "/run/lbd.sock", caFile: "/etc/ssl/ca.pem", caPath: "/etc/ssl/my certs",
			clientCert: `/home/me/"me".pem`, verify: false},
		servers: map[string]*serverDefn{
			"web":        {name: "web", line: 11, url: "https://web.example:8443/ctl", verify: false},
			`back\slash`: {name: `back\slash`, line: 15, verify: true},
		},
		tmplFile: "my.tmpl", tmplName: "brief", tmplPath: "~/tmpl:/usr/share/lbd",
	}
	got, err := parseCtlConfig("rc", good)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", got, want)
	}

	errs := []struct{ name, text, want string }{
		{name: "unknown keyword", text: "# c\nControl \"/x\"\n", want: "rc:2: unrecognized keyword Control"},
		{name: "string as keyword", text: "\"URL\" x\n", want: `rc:1: syntax error: expected a keyword, found the string "URL"`},
		{name: "missing value", text: "URL\n", want: "rc:1: URL: missing value"},
		{name: "two values", text: "CAFile a b\n", want: "rc:1: CAFile: too many arguments (quote a value that has spaces)"},
		{name: "empty value", text: "ClientCert \"\"\n", want: "rc:1: ClientCert: empty value"},
		{name: "unterminated string", text: "\nURL \"/run/x\n", want: "rc:2: missing closing double-quote"},
		{name: "bad boolean", text: "Verify maybe\n", want: `rc:1: Verify: "maybe" is not a boolean (use yes or no, on or off, true or false, 1 or 0)`},
		{name: "End at top level", text: "URL x\nEnd\n", want: "rc:2: End without Server"},
		{name: "End with argument", text: "Server a\nEnd Server\n", want: "rc:2: End takes no arguments"},
		{name: "Server without End", text: "Server \"a\"\nURL x\n", want: `rc:1: Server "a" has no End`},
		{name: "nested Server", text: "Server a\nServer b\nEnd\n", want: `rc:2: Server inside Server "a" (missing End?)`},
		{name: "Server without name", text: "Server\nEnd\n", want: "rc:1: Server: missing value"},
		{name: "Server defined twice", text: "Server a\nEnd\n\nServer a\nEnd\n", want: `rc:4: redefinition of server "a" (first defined at line 1)`},
		{name: "template in a section", text: "Server a\n  TemplateName x\nEnd\n",
			want: "rc:2: TemplateName is not allowed in a Server section (only URL, CAFile, CAPath, ClientCert and Verify are)"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCtlConfig("rc", tc.text)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCtlConfigFile checks which file is read: $POUNDCTL_CONF (absolute,
// relative to $HOME, empty), ~/.poundctl, and the errors of a missing,
// unreadable or broken file.
func TestCtlConfigFile(t *testing.T) {
	good, _ := poundServer(t, false)
	home := t.TempDir()
	other := t.TempDir()
	writeFile(t, home, ".poundctl", "URL \""+good+"\"\n")
	writeFile(t, home, "conf/alt", "URL \""+good+"\"\n")
	abs := writeFile(t, other, "abs.conf", "URL \""+good+"\"\n")
	broken := writeFile(t, other, "broken.conf", "URL \""+good+"\"\nVerify perhaps\n")
	brokenHome := t.TempDir()
	writeFile(t, brokenHome, ".poundctl", "Bogus\n")
	dirHome := t.TempDir()
	if err := os.Mkdir(filepath.Join(dirHome, ".poundctl"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		env    map[string]string
		errHas string
	}{
		{name: "unset: ~/.poundctl", env: map[string]string{"HOME": home}},
		{name: "absolute POUNDCTL_CONF", env: map[string]string{"HOME": brokenHome, "POUNDCTL_CONF": abs}},
		{name: "POUNDCTL_CONF relative to HOME", env: map[string]string{"HOME": home, "POUNDCTL_CONF": "conf/alt"}},
		{name: "empty POUNDCTL_CONF disables the file", env: map[string]string{"HOME": brokenHome, "POUNDCTL_CONF": ""},
			errHas: "can't determine control socket name; use the -s option"},
		{name: "no ~/.poundctl is no error", env: map[string]string{"HOME": other},
			errHas: "can't determine control socket name; use the -s option"},
		{name: "no HOME", env: map[string]string{}, errHas: "can't determine control socket name"},
		{name: "missing POUNDCTL_CONF file", env: map[string]string{"HOME": home, "POUNDCTL_CONF": "/nonexistent/rc"},
			errHas: "lbctl: /nonexistent/rc: no such file or directory\n"},
		{name: "unreadable ~/.poundctl", env: map[string]string{"HOME": dirHome},
			errHas: "lbctl: " + filepath.Join(dirHome, ".poundctl") + ": is a directory\n"},
		{name: "broken ~/.poundctl", env: map[string]string{"HOME": brokenHome},
			errHas: "lbctl: " + filepath.Join(brokenHome, ".poundctl") + ":1: unrecognized keyword Bogus\n"},
		{name: "broken POUNDCTL_CONF", env: map[string]string{"POUNDCTL_CONF": broken},
			errHas: "lbctl: " + broken + `:2: Verify: "perhaps" is not a boolean`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(tc.env, "lbctl", "-q", "list", "/1/1")
			checkList(t, r, tc.errHas)
		})
	}
}

// TestServerSelection checks -S and the order in which the socket is
// found: -s, the selected server's URL, -f's Control, $LBCTL_SOCKET.
func TestServerSelection(t *testing.T) {
	good, _ := poundServer(t, false)
	bad := "/nonexistent/dir/lbd.sock"
	dir := t.TempDir()
	goodCfg := writeFile(t, dir, "good.cfg", "Control \""+good+"\"\n")
	badCfg := writeFile(t, dir, "bad.cfg", "Control \""+bad+"\"\n")
	rc := writeFile(t, dir, "rc", "URL \""+bad+"\"\n"+
		"Server \"good\"\n  URL \""+good+"\"\nEnd\n"+
		"Server \"bad\"\n  URL \""+bad+"\"\nEnd\n"+
		"Server \"nourl\"\n  Verify yes\nEnd\n")
	goodTop := writeFile(t, dir, "goodtop", "URL \""+good+"\"\nServer \"bad\"\n  URL \""+bad+"\"\nEnd\n")
	refused := "no such file or directory (is lbd running with this control socket?)"
	cases := []struct {
		name   string
		conf   string
		args   []string
		env    map[string]string
		errHas string
	}{
		{name: "top-level URL", conf: goodTop},
		{name: "-S selects a section", conf: rc, args: []string{"-S", "good"}},
		{name: "section overrides top-level URL", conf: goodTop, args: []string{"-S", "bad"}, errHas: refused},
		{name: "-s beats the file", conf: rc, args: []string{"-S", "bad", "-s", good}},
		{name: "file beats -f", conf: goodTop, args: []string{"-f", badCfg}},
		{name: "file beats LBCTL_SOCKET", conf: goodTop, env: map[string]string{"LBCTL_SOCKET": bad}},
		{name: "section without URL inherits nothing", conf: rc, args: []string{"-S", "nourl", "-f", goodCfg}},
		{name: "-f when the file has no URL", conf: "", args: []string{"-f", goodCfg}},
		{name: "unknown -S", conf: rc, args: []string{"-S", "nope"}, errHas: "lbctl: nope: no such server defined in " + rc + "\n"},
		{name: "-S without a file", conf: "", args: []string{"-S", "web"},
			errHas: "lbctl: web: no such server defined: no configuration file was read (POUNDCTL_CONF is empty)\n"},
		{name: "-S is case-sensitive", conf: rc, args: []string{"-S", "Good"}, errHas: "Good: no such server defined"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"POUNDCTL_CONF": tc.conf}
			for k, v := range tc.env {
				env[k] = v
			}
			argv := append(append([]string{"lbctl", "-q"}, tc.args...), "list", "/1/1")
			r := run(env, argv...)
			checkList(t, r, tc.errHas)
		})
	}
}

// TestVersionUsesFileURL checks that a URL in ~/.poundctl counts as a
// configured socket for `version`.
func TestVersionUsesFileURL(t *testing.T) {
	good, _ := poundServer(t, false)
	rc := writeFile(t, t.TempDir(), "rc", "URL \""+good+"\"\n")
	r := run(map[string]string{"POUNDCTL_CONF": rc}, "lbctl", "version")
	if r.code != 0 || !strings.Contains(r.stdout, "server: 9.9.9 (pid 4242) on "+good) {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestCtlConfigTemplates checks TemplateFile, TemplatePath and
// TemplateName, and that -t and -T override them.
func TestCtlConfigTemplates(t *testing.T) {
	sock, _ := poundServer(t, false)
	dir := t.TempDir()
	home := t.TempDir()
	tmpl := `{{define "brief"}}brief {{.name}}{{"\n"}}{{end}}{{define "other"}}other {{.name}}{{"\n"}}{{end}}`
	writeFile(t, home, "tmpl/mine.tmpl", tmpl)
	flagFile := writeFile(t, dir, "flag.tmpl", `{{define "brief"}}flag {{.name}}{{"\n"}}{{end}}`)
	conf := func(name, text string) string { return writeFile(t, dir, name, "URL \""+sock+"\"\n"+text) }
	searched := conf("searched", "TemplateFile \"mine.tmpl\"\nTemplatePath \"/nonexistent:~/tmpl\"\nTemplateName \"brief\"\n")
	fileElem := conf("fileelem", "TemplateFile \"whatever\"\nTemplatePath \"~/tmpl/mine.tmpl\"\nTemplateName brief\n")
	missing := conf("missing", "TemplateFile \"nope.tmpl\"\nTemplatePath \"~/tmpl\"\n")
	nameOnly := conf("nameonly", "TemplateName \"default.service\"\n")
	cases := []struct {
		name, conf string
		argv       []string
		want       string
		errHas     string
	}{
		{name: "TemplateFile found in TemplatePath", conf: searched, argv: []string{"poundctl", "list", "/1/0"}, want: "brief web\n"},
		{name: "file element of TemplatePath", conf: fileElem, argv: []string{"poundctl", "list", "/1/0"}, want: "brief web\n"},
		{name: "-T overrides TemplateName", conf: searched, argv: []string{"poundctl", "-T", "other", "list", "/1/0"}, want: "other web\n"},
		{name: "-t overrides TemplateFile", conf: searched, argv: []string{"poundctl", "-t", flagFile, "list", "/1/0"}, want: "flag web\n"},
		{name: "TemplateName alone", conf: nameOnly, argv: []string{"poundctl", "list", "/1/1"}, want: "Service active\n"},
		{name: "not found", conf: missing, argv: []string{"poundctl", "list", "/1/0"},
			errHas: "poundctl: template file nope.tmpl not found in ~/tmpl\n"},
		{name: "lbctl -T takes TemplateFile", conf: searched, argv: []string{"lbctl", "-T", "other", "list", "/1/0"}, want: "other web\n"},
		{name: "lbctl still prints tables", conf: searched, argv: []string{"lbctl", "list", "/1/1"}, want: "PATH "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(map[string]string{"POUNDCTL_CONF": tc.conf, "HOME": home}, tc.argv...)
			if tc.errHas != "" {
				if r.code != 1 || r.stderr != tc.errHas {
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

// checkList checks a `list /1/1` run: the paths of the fake server's
// listener 1 service 1, or with errHas, exit 1 and that error.
func checkList(t *testing.T, r result, errHas string) {
	t.Helper()
	if errHas == "" {
		if r.code != 0 || r.stdout != "/1/1\n/1/1/0\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		return
	}
	if r.code != 1 || !strings.Contains(r.stderr, errHas) {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, errHas)
	}
}
