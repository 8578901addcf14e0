package functionaltests

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// poundSessConfig has a control socket and one listener whose service
// pins sessions by the X-Session header.
const poundSessConfig = "Daemon 0\nLogLevel 0\nControl \"{DIR}/ctl.sock\"\n" +
	"ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n" +
	"\tService\n\t\tSession\n\t\t\tType Header\n\t\t\tID \"X-Session\"\n\t\t\tTTL 300\n\t\tEnd\n%s\tEnd\nEnd\n"

// sessionsTmpl is a poundctl template file in Pound's style: a define
// inside a define, blocks that define their parts on first use, comments
// after a space with trim markers, range variables.
const sessionsTmpl = `{{define "default" -}}
  {{define "keys" -}}
    {{range $i, $s = .}} {{$s.key}}{{end}}
  {{- end}}{{ /* keys */ -}}
  {{if eq .kind "core" -}}
    version {{.version}} workers {{.workers.min}}-{{.workers.max}} count {{.workers.count}}
  {{else if eq .kind "listener" -}}
    {{block "listener" . -}}
      {{range _, $svc = .services}}{{$svc.session_type}}:{{template "keys" $svc.sessions}}{{end}}
    {{end}}{{ /* block */ -}}
  {{else -}}
    kind {{.kind}}
  {{end -}}
{{end}}
`

// startAsPound starts lbd through a link named pound, as a drop-in Pound.
func startAsPound(t *testing.T, cfg string) *proc {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	cfg = strings.ReplaceAll(strings.ReplaceAll(cfg, "{PORT}", fmt.Sprint(port)), "{DIR}", dir)
	path := filepath.Join(dir, "pound.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "pound")
	if err := os.Symlink(binary(t, "lbd"), link); err != nil {
		t.Fatal(err)
	}
	return runBinary(t, link, dir, path, fmt.Sprintf("127.0.0.1:%d", port))
}

// TestPoundctlTemplatesAndSessions runs lbd as pound and poundctl with
// template files of Pound's style: the sessions come in the order they
// were created (whatever their hashes), a deleted and re-added one comes
// last, the core reports Pound's version and pool, and the template file
// is also found through POUND_TMPL_PATH and the socket through a file
// ~/.poundctl includes.
func TestPoundctlTemplatesAndSessions(t *testing.T) {
	one := startBackend(t, "127.0.0.2", "one", echoHandler("one"))
	two := startBackend(t, "127.0.0.3", "two", echoHandler("two"))
	p := startAsPound(t, fmt.Sprintf(poundSessConfig, one.block()+two.block()))
	sock := filepath.Join(p.dir, "ctl.sock")
	waitSocket(t, sock)
	keys := make([]string, 12) // enough to land in many shards of the table
	for i := range keys {
		keys[i] = fmt.Sprintf("user%02d", i)
		sendSession(t, p.addr, keys[i])
	}
	tmplDir := t.TempDir()
	file := filepath.Join(tmplDir, "poundctl.tmpl")
	if err := os.WriteFile(file, []byte(sessionsTmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	writeText(t, filepath.Join(home, ".poundctl"), "Include \"ctl/socket.conf\"\n")
	writeText(t, filepath.Join(home, "ctl", "socket.conf"), "URL \""+sock+"\"\n")
	noHome := []string{"HOME=" + t.TempDir(), "POUNDCTL_CONF="}
	listed := func(ks ...string) string { return "HEADER: " + strings.Join(ks, " ") + "\n" }
	reAdded := append(append(append([]string{}, keys[:3]...), keys[4:]...), keys[3])
	runSteps(t, []lbctlStep{
		{name: "sessions in creation order", prog: "poundctl", env: noHome,
			args: []string{"-s", sock, "-t", file, "list", "/1"}, outHas: []string{listed(keys...)}},
		{name: "delete one", prog: "poundctl", env: noHome, args: []string{"-s", sock, "-t", file, "delete", "/1/0", keys[3]}},
		{name: "add it back", prog: "poundctl", env: noHome, args: []string{"-s", sock, "-t", file, "add", "/1/0/1", keys[3]}},
		{name: "the added one comes last", prog: "poundctl", env: noHome,
			args: []string{"-s", sock, "-t", file, "list", "/1"}, outHas: []string{listed(reAdded...)}},
		{name: "core as Pound's", prog: "poundctl", env: noHome, args: []string{"-s", sock, "-t", file, "core"},
			outHas: []string{"version 4.23.90 workers 5-128 count 5\n"}},
		{name: "template file from POUND_TMPL_PATH", prog: "poundctl",
			env:  append([]string{"POUND_TMPL_PATH=/nonexistent:" + tmplDir}, noHome...),
			args: []string{"-s", sock, "list", "/1"}, outHas: []string{listed(reAdded...)}},
		{name: "socket from an included file", prog: "poundctl",
			env:  []string{"HOME=" + home, "POUND_TMPL_PATH=" + tmplDir},
			args: []string{"core"}, outHas: []string{"version 4.23.90"}},
	})
}

// sendSession sends one request carrying session key k.
func sendSession(t *testing.T, addr, k string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Session", k)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("session %s: status %d", k, resp.StatusCode)
	}
}

// writeText writes a file, creating its directory.
func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
