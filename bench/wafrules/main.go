// Command wafrules writes the rule files that both WAFs of the
// differential test (functional-tests/waf_diff_test.go) and of the
// benchmark (bench/waf.sh) load: the same files, given by path to nginx's
// modsecurity_rules_file and to lbd's WafRules.
//
//	go run ./bench/wafrules -set crs4 -pl 1 -out DIR   # prints DIR/main.conf
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
)

func main() {
	set := flag.String("set", "crs4", "rule set: crs4 (lbd's built-in CRS 4) or crs3 (Debian's modsecurity-crs)")
	pl := flag.Int("pl", 1, "paranoia level, 1 to 4")
	out := flag.String("out", "", "directory to write into (created)")
	flag.Parse()
	if *out == "" || *pl < 1 || *pl > 4 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "wafrules:", err)
		os.Exit(1)
	}
	dir, err := filepath.Abs(*out)
	if err == nil {
		var conf string
		if conf, err = write(dir, *set, *pl); err == nil {
			fmt.Println(conf)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "wafrules:", err)
	os.Exit(1)
}

const (
	crs3Rules = "/usr/share/modsecurity-crs/rules"
	crs3Setup = "/etc/modsecurity/crs/crs-setup.conf"
)

// modsecConf is the engine setup both WAFs load before the CRS: the
// essentials of ModSecurity's recommended configuration (body access,
// XML and JSON body processors, refusing unparsable bodies), written
// here so that the test does not depend on a file Debian does not ship.
const modsecConf = `# Engine setup shared by nginx+libmodsecurity and lbd+Coraza.
SecRuleEngine On
SecRequestBodyAccess On
SecRule REQUEST_HEADERS:Content-Type "^(?:application(?:/soap\+|/)|text/)xml" \
    "id:200000,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=XML"
SecRule REQUEST_HEADERS:Content-Type "^application/json" \
    "id:200001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"
SecRequestBodyLimit 13107200
SecRequestBodyNoFilesLimit 131072
SecRequestBodyLimitAction Reject
SecRule REQBODY_ERROR "!@eq 0" \
    "id:200002,phase:2,t:none,log,deny,status:400,msg:'Failed to parse request body.'"
SecRule MULTIPART_STRICT_ERROR "!@eq 0" \
    "id:200003,phase:2,t:none,log,deny,status:400,msg:'Multipart request body failed strict validation.'"
SecRule MULTIPART_UNMATCHED_BOUNDARY "@eq 1" \
    "id:200004,phase:2,t:none,log,deny,msg:'Multipart parser detected a possible unmatched boundary.'"
SecResponseBodyAccess Off
SecTmpDir {DIR}
SecDataDir {DIR}
SecAuditEngine Off
SecArgumentSeparator &
SecCookieFormat 0
`

// write writes, under dir, modsecurity.conf, the rule set's setup file
// at paranoia level pl and a main file including them and the rules; it
// returns the main file.
func write(dir, set string, pl int) (string, error) {
	var setup []byte
	var rules string
	var err error
	switch set {
	case "crs3":
		if setup, err = os.ReadFile(crs3Setup); err != nil {
			return "", err
		}
		setup = fmt.Appendf(setup, "\nSecAction \"id:900000,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level=%d\"\n", pl)
		rules = crs3Rules
	case "crs4":
		rules = filepath.Join(dir, "crs4")
		if setup, err = writeCRS4(rules); err != nil {
			return "", err
		}
		setup = fmt.Appendf(setup, "\nSecAction \"id:900000,phase:1,nolog,pass,t:none,setvar:tx.blocking_paranoia_level=%d\"\n", pl)
	default:
		return "", fmt.Errorf("unknown rule set %q (crs3 or crs4)", set)
	}
	files := map[string]string{
		"modsecurity.conf": strings.ReplaceAll(modsecConf, "{DIR}", dir),
		"crs-setup.conf":   string(setup),
		"main.conf": fmt.Sprintf("Include %s/modsecurity.conf\nInclude %s/crs-setup.conf\nInclude %s/*.conf\n",
			dir, dir, rules),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "main.conf"), nil
}

// chainNoActions is a chained rule written without an action list, which
// libmodsecurity 3.0.9's parser refuses ("Expecting an action"); CRS 4
// has two (949111, 959111).
var chainNoActions = regexp.MustCompile(`(?m)^(\s+SecRule\s+\S+\s+"[^"\n]*")[ \t]*$`)

// writeCRS4 copies the CRS 4 lbd embeds (the coraza-coreruleset module,
// the same bytes as lbd's "@crs") into dir and returns its setup file.
// One edit, without effect on what the rules do, lets libmodsecurity
// 3.0.9 parse them: an explicit "t:none" on the action-less chained rules.
// Copies, too, because the module's path has an '@', which
// libmodsecurity's Include does not take.
func writeCRS4(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(coreruleset.FS, "@owasp_crs")
	if err != nil {
		return nil, err
	}
	edits := 0
	for _, e := range entries {
		b, err := fs.ReadFile(coreruleset.FS, path.Join("@owasp_crs", e.Name()))
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(e.Name(), ".conf") {
			edits += len(chainNoActions.FindAll(b, -1))
			b = chainNoActions.ReplaceAll(b, []byte(`$1 "t:none"`))
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return nil, err
		}
	}
	if edits != 2 {
		return nil, fmt.Errorf("CRS 4: %d action-less chained rules, expected 2 (949111, 959111): check that the edit still fits", edits)
	}
	return fs.ReadFile(coreruleset.FS, "@crs-setup.conf.example")
}
