package lbctl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCtlConfigInclude checks Include in ~/.poundctl: a file, a glob, a
// name relative to the home directory, inside a Server section, and the
// errors of a missing file and of a file including itself.
func TestCtlConfigInclude(t *testing.T) {
	home := t.TempDir()
	writeFile(t, home, "servers/b.conf", "Server \"b\"\n  URL \"/run/b.sock\"\nEnd\n")
	writeFile(t, home, "servers/a.conf", "Server \"a\"\n  URL \"/run/a.sock\"\nEnd\n")
	writeFile(t, home, "url.conf", "URL \"/run/top.sock\"\n")
	writeFile(t, home, "verify.conf", "  Verify no\n")
	writeFile(t, home, "loop.conf", "Include \"loop.conf\"\n")
	writeFile(t, home, "bad.conf", "TemplateName\n")
	cases := []struct {
		name, text string
		check      func(t *testing.T, c *ctlConfig)
		errHas     string
	}{
		{name: "relative to home", text: "Include \"url.conf\"\nTemplateName x\n", check: func(t *testing.T, c *ctlConfig) {
			if c.top.url != "/run/top.sock" || c.tmplName != "x" {
				t.Errorf("url %q, name %q", c.top.url, c.tmplName)
			}
		}},
		{name: "absolute", text: "Include \"" + filepath.Join(home, "url.conf") + "\"\n", check: func(t *testing.T, c *ctlConfig) {
			if c.top.url != "/run/top.sock" {
				t.Errorf("url %q", c.top.url)
			}
		}},
		{name: "glob, in order", text: "Include \"servers/*.conf\"\n", check: func(t *testing.T, c *ctlConfig) {
			if c.servers["a"] == nil || c.servers["b"] == nil || c.servers["a"].url != "/run/a.sock" {
				t.Errorf("servers %v", c.servers)
			}
		}},
		{name: "inside a Server section", text: "Server \"s\"\n  Include \"verify.conf\"\nEnd\n", check: func(t *testing.T, c *ctlConfig) {
			if s := c.servers["s"]; s == nil || s.verify {
				t.Errorf("server s %+v", s)
			}
		}},
		{name: "missing", text: "\nInclude \"nope.conf\"\n", errHas: "rc:2: can't stat " + filepath.Join(home, "nope.conf") + ": no such file or directory"},
		{name: "itself", text: "Include \"loop.conf\"\n", errHas: filepath.Join(home, "loop.conf") + ":1: " + filepath.Join(home, "loop.conf") + " already included"},
		{name: "error in an included file names it", text: "Include \"bad.conf\"\n", errHas: filepath.Join(home, "bad.conf") + ":1: TemplateName: missing value"},
		{name: "no name", text: "Include\n", errHas: "rc:1: Include: missing value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCtlConfigIn("rc", home, tc.text)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// TestCtlConfigIncludeFromHome runs lbctl with a ~/.poundctl that includes
// the socket's URL from another file.
func TestCtlConfigIncludeFromHome(t *testing.T) {
	sock, _ := poundServer(t, false)
	home := t.TempDir()
	writeFile(t, home, ".poundctl", "Include \"ctl/url.conf\"\n")
	writeFile(t, home, "ctl/url.conf", "URL \""+sock+"\"\n")
	r := run(map[string]string{"HOME": home}, "poundctl", "list", "/1/1")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Service active") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
