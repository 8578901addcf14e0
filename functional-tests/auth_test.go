package functionaltests

import (
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// htpasswdTool is Debian's htpasswd (apache2-utils), which writes the
// fixtures: lbd must read what the real tool writes.
func htpasswdTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("htpasswd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("htpasswd is not installed (apache2-utils)")
		}
		t.Skip("htpasswd is not installed (apt-get install apache2-utils)")
	}
	return p
}

// addUser sets user's password in file with htpasswd -b and the format
// flag (the file is created when missing).
func addUser(t *testing.T, tool, file, flag, user, pass string) {
	t.Helper()
	args := []string{"-b" + flag}
	if _, err := os.Stat(file); err != nil {
		args[0] += "c"
	}
	out, err := exec.Command(tool, append(args, file, user, pass)...).CombinedOutput()
	if err != nil {
		t.Fatalf("htpasswd %v: %v\n%s", args, err, out)
	}
}

// authConfig is the manual's recipe: a first service answers 401 with a
// challenge to requests without valid credentials; the backend follows.
func authConfig(statement string, be *backend) string {
	return `ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "auth"
		Not ` + statement + `
		Rewrite response
			SetHeader "WWW-Authenticate: Basic realm=\"lbd test\""
		End
		Error 401
	End
	Service
		` + backendBlock(be) + `
	End
End
`
}

// authGet sends GET / with optional Basic credentials ("" for none; a value
// starting with "raw:" is sent as the header value as is).
func authGet(t *testing.T, p *proc, cred string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+p.addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case strings.HasPrefix(cred, "raw:"):
		req.Header.Set("Authorization", cred[4:])
	case cred != "":
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestBasicAuthHtpasswdFormats: every format htpasswd writes, in one
// file, through the binary.
func TestBasicAuthHtpasswdFormats(t *testing.T) {
	tool := htpasswdTool(t)
	a := echoBackend(t, "a")
	file := filepath.Join(t.TempDir(), "htpasswd")
	formats := []struct{ flag, name string }{
		{"m", "apr1"}, {"B", "bcrypt"}, {"2", "sha256"}, {"5", "sha512"}, {"s", "sha1"}, {"p", "plain"},
	}
	for _, f := range formats {
		addUser(t, tool, file, f.flag, f.name, "pw-"+f.name+":x y")
	}
	p := startLBD(t, authConfig(`BasicAuth "`+file+`"`, a))
	type tc struct {
		name, cred string
		status     int
	}
	var cases []tc
	for _, f := range formats {
		cases = append(cases,
			tc{f.name + " right password", f.name + ":pw-" + f.name + ":x y", 200},
			tc{f.name + " wrong password", f.name + ":pw-" + f.name, 401})
	}
	cases = append(cases,
		tc{"no credentials", "", 401},
		tc{"unknown user", "nobody:pw-plain:x y", 401},
		tc{"another scheme", "raw:Bearer abc", 401},
		tc{"malformed credentials are Pound's 500", "raw:Basic %%%", 500},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := authGet(t, p, c.cred)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			challenge := resp.Header.Get("WWW-Authenticate")
			if (c.status == 401) != (challenge == `Basic realm="lbd test"`) {
				t.Fatalf("WWW-Authenticate %q with status %d", challenge, c.status)
			}
			if c.status == 200 && resp.Header.Get("X-Backend") != "a" {
				t.Fatal("not answered by the backend")
			}
		})
	}
}

// expectStatus polls until a request with cred gets want (a watched
// file is read again shortly after it changes).
func expectStatus(t *testing.T, p *proc, cred string, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := authGet(t, p, cred).StatusCode
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %d for %q, want %d\n%s", got, cred, want, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBasicAuthFileChanges: the password file is followed without a
// reload unless read with -file; a file that appears later is picked
// up, and one that goes away lets nobody in.
func TestBasicAuthFileChanges(t *testing.T) {
	tool := htpasswdTool(t)
	a := echoBackend(t, "a")
	dir := t.TempDir()
	followed, once := filepath.Join(dir, "followed"), filepath.Join(dir, "once")
	addUser(t, tool, once, "B", "gray", "first")
	p := startLBD(t, authConfig(`BasicAuth "`+followed+`"`, a))
	q := startLBD(t, authConfig(`BasicAuth -file "`+once+`"`, a))

	expectStatus(t, p, "gray:first", 401) // not there yet
	addUser(t, tool, followed, "B", "gray", "first")
	expectStatus(t, p, "gray:first", 200)
	addUser(t, tool, followed, "m", "gray", "second")
	expectStatus(t, p, "gray:first", 401)
	expectStatus(t, p, "gray:second", 200)
	waitLog(t, p, "file reloaded", 5*time.Second)
	if err := os.Remove(followed); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, p, "gray:second", 401)

	expectStatus(t, q, "gray:first", 200)
	addUser(t, tool, once, "B", "gray", "second")
	time.Sleep(300 * time.Millisecond) // what a watcher would need
	if got := authGet(t, q, "gray:first").StatusCode; got != 200 {
		t.Fatalf("-file: status %d after the file changed, want 200 (read once)", got)
	}
}

// TestTBFExhaustionAndRefill: each key's bucket gives its burst, then
// the request falls to the next service until a token comes back.
func TestTBFExhaustionAndRefill(t *testing.T) {
	a := echoBackend(t, "a")
	p := startLBD(t, `ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service
		TBF "%[path]" 1/2s 3
		`+backendBlock(a)+`
	End
	Service
		Error 429
	End
End
`)
	status := func(path string) int {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + p.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	seq := func(path string, want ...int) {
		t.Helper()
		for i, w := range want {
			if got := status(path); got != w {
				t.Fatalf("%s request %d: status %d, want %d", path, i, got, w)
			}
		}
	}
	seq("/a", 200, 200, 200, 429, 429)
	seq("/b", 200, 200, 200, 429) // its own bucket
	time.Sleep(2100 * time.Millisecond)
	seq("/a", 200, 429) // one token in two seconds
	time.Sleep(6100 * time.Millisecond)
	seq("/b", 200, 200, 200, 429) // full again, never fuller
}
