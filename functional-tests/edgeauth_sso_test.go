package functionaltests

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSingleSignOn is a real single sign-on setup: oauth2-proxy as lbd's
// forward authentication service, against the example OpenID Connect
// provider of zitadel/oidc and its test user (both built by make from
// tools/sso). curl with a cookie jar is redirected to the provider's
// login page, posts the credentials, and reaches the application through
// lbd; without the cookie it is redirected; a client's X-Forwarded-User
// never reaches the application.
func TestSingleSignOn(t *testing.T) {
	curl := needTool(t, "curl")
	o2p, op := ssoTool(t, "oauth2-proxy"), ssoTool(t, "oidc-example-op")
	dir := t.TempDir()
	opPort, o2pPort, lbdPort := freePort(t), freePort(t), freePort(t)
	lbdURL := fmt.Sprintf("http://127.0.0.1:%d", lbdPort)
	opURL := fmt.Sprintf("http://localhost:%d/", opPort) // the example provider's issuer is always localhost

	startProgram(t, dir, "op", op, nil, "PORT="+fmt.Sprint(opPort), "REDIRECT_URI="+lbdURL+"/oauth2/callback")
	waitHTTP(t, opURL+".well-known/openid-configuration")
	startProgram(t, dir, "oauth2-proxy", o2p, []string{
		"--provider=oidc", "--oidc-issuer-url=" + opURL, "--client-id=web", "--client-secret=secret",
		"--cookie-secret=0123456789abcdef0123456789abcdef", "--cookie-secure=false", "--email-domain=*",
		fmt.Sprintf("--http-address=127.0.0.1:%d", o2pPort), "--upstream=static://202",
		"--reverse-proxy", "--trusted-proxy-ip=127.0.0.1/32", "--skip-provider-button", "--set-xauthrequest",
		"--redirect-url=" + lbdURL + "/oauth2/callback",
	})
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/ping", o2pPort))
	app := echoBackend(t, "app")
	cfg := fmt.Sprintf(`ForwardAuth "sso"
	URL "http://127.0.0.1:%d/"
	RequestHeaders "Cookie"
	ResponseHeaders "X-Auth-Request-User" "X-Auth-Request-Email" "X-Forwarded-User"
End
ListenHTTP
	Address 127.0.0.1
	Port %d
	Service "oauth2-proxy"
		URL "^/oauth2/"
		Backend
			Address 127.0.0.1
			Port %d
		End
	End
	Service "app"
		Authenticate "sso"
		%s
	End
End
`, o2pPort, lbdPort, o2pPort, backendBlock(app))
	path := filepath.Join(dir, "lbd.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	runLBD(t, dir, path, fmt.Sprintf("127.0.0.1:%d", lbdPort))

	jar := filepath.Join(dir, "cookies")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "10"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// Without a session: a redirect to the provider, with oauth2-proxy's
	// CSRF cookie, relayed by lbd.
	out := run("-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", lbdURL+"/app/page")
	if !strings.HasPrefix(out, "302 "+opURL+"auth?") {
		t.Fatalf("without a session: %q", out)
	}
	// Follow it to the login page.
	login := filepath.Join(dir, "login.html")
	out = run("-c", jar, "-b", jar, "-L", "-o", login, "-w", "%{url_effective}", lbdURL+"/app/page")
	if !strings.HasPrefix(out, opURL+"login/username?authRequestID=") {
		t.Fatalf("not at the login page: %q", out)
	}
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindStringSubmatch(readFile(t, login))
	if m == nil {
		t.Fatalf("no login form:\n%s", readFile(t, login))
	}
	// Post the test user's credentials; the redirects lead back through
	// lbd (the callback) to the application. The client adds a forged
	// X-Forwarded-User to every request.
	heads := filepath.Join(dir, "heads")
	out = run("-c", jar, "-b", jar, "-L", "-D", heads, "-o", "/dev/null", "-w", "%{url_effective} %{http_code}",
		"-H", "X-Forwarded-User: mallory", "-H", "X-Auth-Request-User: mallory",
		"--data-urlencode", "id="+m[1], "--data-urlencode", "username=test-user@localhost",
		"--data-urlencode", "password=verysecure", opURL+"login/username")
	if out != lbdURL+"/app/page 200" {
		t.Fatalf("after the login: %q\n%s", out, readFile(t, heads))
	}
	final := lastHead(readFile(t, heads))
	for _, want := range []string{"X-Backend: app", "X-Got-X-Auth-Request-User: id1", "X-Got-X-Auth-Request-Email: test-user@zitadel.ch"} {
		if !strings.Contains(final, want+"\r\n") {
			t.Errorf("the application's answer lacks %q:\n%s", want, final)
		}
	}
	if strings.Contains(final, "mallory") {
		t.Errorf("a forged header reached the application:\n%s", final)
	}
	// The session cookie alone is enough from now on.
	out = run("-b", jar, "-D", "-", "-o", "/dev/null", lbdURL+"/app/other")
	if !strings.Contains(out, "X-Got-X-Auth-Request-User: id1") {
		t.Fatalf("with the session cookie:\n%s", out)
	}
}

// ssoTool finds a program make builds from tools/sso.
func ssoTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not built: make bin/tools/oauth2-proxy bin/tools/oidc-example-op (make functional does)", name)
	}
	return p
}

// lastHead is the last response head curl -D wrote.
func lastHead(s string) string {
	heads := strings.Split(strings.TrimSpace(s), "\r\n\r\n")
	return heads[len(heads)-1] + "\r\n"
}

// startProgram runs bin with args and env in dir, logging to dir/name.log;
// it is killed (by PID) when the test ends.
func startProgram(t *testing.T, dir, name, bin string, args []string, env ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		log.Close()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name()) // best effort: only adds context to a failure
			t.Logf("%s:\n%s", name, data)
		}
	})
}

// waitHTTP polls url until it answers (any status).
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
