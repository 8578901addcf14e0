package rules

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func basic(cred string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(cred))
}

func TestBasicAuth(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "htpasswd")
	// alice's hash is "pa:ss w0rd" in APR1, bob's is plain text.
	if err := os.WriteFile(pw, []byte("alice:$apr1$hNN8gezV$OtxSD3nRa0FF2PRvQaizQ0\nbob:guessMe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		headers []string
		want    bool
		err     bool
	}{
		{name: "no Authorization header", want: false},
		{name: "right APR1 password", headers: []string{basic("alice:pa:ss w0rd")}, want: true},
		{name: "right plain password", headers: []string{basic("bob:guessMe")}, want: true},
		{name: "wrong password", headers: []string{basic("alice:nope")}, want: false},
		{name: "unknown user", headers: []string{basic("carol:guessMe")}, want: false},
		{name: "scheme in any case", headers: []string{"Authorization: bAsIc " + base64.StdEncoding.EncodeToString([]byte("bob:guessMe"))}, want: true},
		{name: "unpadded base64", headers: []string{"Authorization: Basic " + base64.RawStdEncoding.EncodeToString([]byte("bob:guessMe"))}, want: true},
		{name: "quoted credentials", headers: []string{`Authorization: Basic "` + base64.StdEncoding.EncodeToString([]byte("bob:guessMe")) + `"`}, want: true},
		{name: "another scheme does not match", headers: []string{"Authorization: Bearer abc"}, want: false},
		{name: "only the first header counts", headers: []string{basic("alice:nope"), basic("bob:guessMe")}, want: false},
		{name: "not base64 is an error", headers: []string{"Authorization: Basic !!!"}, err: true},
		{name: "no colon is an error", headers: []string{basic("bobguessMe")}, err: true},
		{name: "nothing after the scheme is an error", headers: []string{"Authorization: Basic"}, err: true},
	}
	for _, mode := range []string{"", "-file ", "-filewatch "} {
		p := compileFirst(t, wrap("", "", "BasicAuth "+mode+`"`+pw+`"`))
		var st State
		for _, tc := range cases {
			t.Run(mode+tc.name, func(t *testing.T) {
				request(&st, p.env, "127.0.0.1", "GET /", tc.headers...)
				got, err := p.sel.Select(&st)
				if tc.err {
					if !errors.Is(err, errBadCredentials) {
						t.Fatalf("error %v, want errBadCredentials", err)
					}
					return
				}
				if err != nil || got != tc.want {
					t.Fatalf("Select = %v, %v; want %v", got, err, tc.want)
				}
			})
		}
	}
}

// TestBasicAuthMissingFile: a followed file that does not exist yet lets
// nobody in; with -file it is a configuration error.
func TestBasicAuthMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	p := compileFirst(t, wrap("", "", `BasicAuth "`+missing+`"`))
	var st State
	request(&st, p.env, "127.0.0.1", "GET /", basic("bob:guessMe"))
	if ok, err := p.sel.Select(&st); ok || err != nil {
		t.Fatalf("Select = %v, %v; want false", ok, err)
	}
}

func TestTBF(t *testing.T) {
	p := compileFirst(t, wrap("", "", `Path "^/(.*)"`+"\n"+`TBF "%[remoteip 0]-$1" 1/10s 2`))
	var st State
	steps := []struct {
		client, path string
		want         bool
	}{
		{"192.0.2.1", "/a", true}, {"192.0.2.1", "/a", true}, {"192.0.2.1", "/a", false},
		{"192.0.2.1", "/b", true}, // another group, another bucket
		{"192.0.2.2", "/a", true}, // another client, another bucket
		{"192.0.2.1", "/a", false},
	}
	for i, s := range steps {
		request(&st, p.env, s.client, "GET "+s.path)
		got, err := p.sel.Select(&st)
		if err != nil || got != s.want {
			t.Fatalf("step %d (%s %s): %v, %v; want %v", i, s.client, s.path, got, err, s.want)
		}
	}
}

func TestTBFKeyErrors(t *testing.T) {
	cases := []struct {
		name, conds string
	}{
		{name: "a key naming a group that did not match", conds: `TBF "$3" 10 10`},
		{name: "a burst of 0", conds: `TBF "k" 10 0`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := compileFirst(t, wrap("", "", tc.conds))
			var st State
			request(&st, p.env, "127.0.0.1", "GET /")
			if _, err := p.sel.Select(&st); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
