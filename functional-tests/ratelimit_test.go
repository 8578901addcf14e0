package functionaltests

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Rate limits keyed by request accessors, with Retry-After, and what
// lbctl shows of them, through a config file, the real binary and the
// wire.

// jwtToken is an unsigned bearer token whose payload is claims.
func jwtToken(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

// limitGet sends GET path with the headers and returns the status and
// the Retry-After header.
func limitGet(t *testing.T, p *proc, path string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+p.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestTBFKeyedByAccessorsWithRetryAfter: a bucket per header value, per
// cookie and per JWT claim, two requests per minute each; the third is
// answered 429 by the Error service with the seconds until the bucket has
// a token again. Requests of other keys are not limited.
func TestTBFKeyedByAccessorsWithRetryAfter(t *testing.T) {
	a := echoBackend(t, "a")
	cases := []struct {
		name, key        string
		client1, client2 string // a header line naming each client
	}{
		{"header", "%[header X-Api-Key]", "X-Api-Key: k1", "X-Api-Key: k2"},
		{"cookie", "%[cookie sid]", "Cookie: theme=dark; sid=s1", "Cookie: sid=s2"},
		{"jwt claim", "%[jwt sub]", "Authorization: Bearer " + jwtToken(`{"sub":"alice","exp":1}`),
			"Authorization: Bearer " + jwtToken(`{"sub":"bob"}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := startLBD(t, fmt.Sprintf(`ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "limited"
		Not TBF %q 2/60s 2
		Error 429
	End
	Service
		%s
	End
End
`, tc.key, backendBlock(a)))
			for i, want := range []int{200, 200, 429} {
				status, retry := limitGet(t, p, "/", tc.client1)
				if status != want {
					t.Fatalf("request %d: status %d, want %d", i, status, want)
				}
				if want == 200 && retry != "" {
					t.Fatalf("request %d: Retry-After %q on a request that went through", i, retry)
				}
				if want == 429 {
					// One token every 30 s: the bucket just ran dry.
					if n, err := strconv.Atoi(retry); err != nil || n < 28 || n > 30 {
						t.Fatalf("Retry-After %q, want about 30 seconds", retry)
					}
				}
			}
			if status, _ := limitGet(t, p, "/", tc.client2); status != 200 {
				t.Fatalf("another key: status %d, want 200", status)
			}
		})
	}
}

// TestLbctlShowsLimits: lbctl lists the TBF of a service with its
// buckets in use (a token a minute, so they stay in use through the
// test), and the BasicAuth file with the generation of its content,
// which goes up when the file changes.
func TestLbctlShowsLimits(t *testing.T) {
	tool := htpasswdTool(t)
	a := echoBackend(t, "a")
	dir := t.TempDir()
	users, sock := filepath.Join(dir, "users"), filepath.Join(dir, "ctl.sock")
	addUser(t, tool, users, "B", "gray", "first")
	p := startLBD(t, `Control "`+sock+`"
ListenHTTP
	Address 127.0.0.1
	Port {PORT}
	Service "app"
		BasicAuth "`+users+`"
		TBF "%[header X-Api-Key]" 1/60s 5
		`+backendBlock(a)+`
	End
End
`)
	waitSocket(t, sock)
	for _, key := range []string{"k1", "k2", "k3"} {
		limitGet(t, p, "/", "X-Api-Key: "+key, "Authorization: Basic "+base64.StdEncoding.EncodeToString([]byte("gray:first")))
	}
	list := func() string {
		out, errOut, code := lbctlRun(t, "lbctl", nil, "-s", sock, "list", "/1/0")
		if code != 0 {
			t.Fatalf("lbctl list: %d %s", code, errOut)
		}
		return out
	}
	out := list()
	for _, want := range []string{
		"PATH TBF KEY RATE BURST BUCKETS", "/1/0 %[header X-Api-Key] 0.0167/s 5 3",
		"PATH BASICAUTH FILE GENERATION USERS WATCHED", "/1/0 " + users + " 1 1 yes",
	} {
		if !hasRow(out, want) {
			t.Fatalf("lbctl list lacks the row %q in\n%s", want, out)
		}
	}
	addUser(t, tool, users, "m", "other", "pw")
	deadline := time.Now().Add(5 * time.Second)
	for !hasRow(out, "/1/0 "+users+" 2 2 yes") {
		if time.Now().After(deadline) {
			t.Fatalf("the generation did not go up after the file changed:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
		out = list()
	}
	js, _, code := lbctlRun(t, "lbctl", nil, "-s", sock, "-j", "list", "/1/0")
	if code != 0 || !strings.Contains(js, `"basic_auth":[{"file":"`+users+`", "generation":2, "users":2, "watch":true}]`) ||
		!strings.Contains(js, `"tbf":[{"buckets":3, "burst":5, "interval":60000000000, "key":"%[header X-Api-Key]"}]`) {
		t.Fatalf("lbctl -j list: %s", js)
	}
}

// hasRow reports whether a line of out has the words of row.
func hasRow(out, row string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(l), " ") == row {
			return true
		}
	}
	return false
}
