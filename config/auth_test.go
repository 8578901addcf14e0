package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTBFRate(t *testing.T) {
	cases := []struct {
		rate     string
		interval uint64 // ns per token
		err      string
	}{
		{rate: "1", interval: 1e9},
		{rate: "10", interval: 1e8},
		{rate: "10/s", interval: 1e8},
		{rate: "1/2s", interval: 2e9},
		{rate: "200/500ms", interval: 2.5e6},
		{rate: "5/MS", interval: 2e5},
		{rate: "1/us", interval: 1e3},
		{rate: "3", interval: 333333333},
		{rate: "0", err: "bad unsigned number"},
		{rate: "x/s", err: "bad unsigned number"},
		{rate: "99999999999999999999", err: "bad unsigned number"},
		{rate: "5s", err: "invalid rate"},
		{rate: "5/", err: "bad interval specifier"},
		{rate: "5/2", err: "bad interval specifier"},
		{rate: "5/0s", err: "bad interval specifier"},
		{rate: "5/m", err: "bad interval specifier"},
		{rate: "2000/1us", err: "effective rate is 0"},
		{rate: "1/99999999999999999s", err: "effective rate is out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.rate, func(t *testing.T) {
			src := "ListenHTTP\n Service\n  TBF \"k\" " + tc.rate + " 5\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n"
			cfg, _, err := LoadBytes("t.cfg", []byte(src), LoadOptions{NoDNS: true})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Listeners[0].Services[0].Conditions[0].Rare().TBF
			if got.Interval != tc.interval || got.Burst != 5 || got.Limiter == nil {
				t.Fatalf("TBF %+v, want interval %d, burst 5 and a limiter", got, tc.interval)
			}
		})
	}
}

func TestTBFAndBasicAuthArguments(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("u:p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none")
	cases := []struct {
		name, cond, err, warn string
	}{
		{name: "burst out of range", cond: `TBF "k" 1 4294967296`, err: "value out of range [0..4294967295]"},
		{name: "burst 0 warns", cond: `TBF "k" 1 0`, warn: "a burst of 0 makes every request fail"},
		{name: "a quoted rate is refused", cond: `TBF "k" "1" 1`, err: "argument type mismatch"},
		{name: "followed file", cond: `BasicAuth "` + pw + `"`},
		{name: "followed file that is missing", cond: `BasicAuth "` + missing + `"`},
		{name: "-file", cond: `BasicAuth -file "` + pw + `"`},
		{name: "-file that is missing", cond: `BasicAuth -file "` + missing + `"`, err: "file " + missing + " does not exist"},
		{name: "-file that is a directory", cond: `BasicAuth -file "` + dir + `"`, err: "can't open " + dir},
		{name: "no file", cond: `BasicAuth`, err: "required argument missing"},
		{name: "a file twice", cond: `BasicAuth -file "` + pw + `" "` + pw + `"`, err: "superfluous arguments"},
		{name: "not in response rules", cond: "Rewrite response\n BasicAuth \"" + pw + "\"\n SetHeader \"X: 1\"\nEnd", err: "unrecognized keyword"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "ListenHTTP\n Service\n  " + tc.cond + "\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n"
			_, warns, err := LoadBytes("t.cfg", []byte(src), LoadOptions{NoDNS: true})
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if got := string(diagText(warns, nil)); !strings.Contains(got, tc.warn) || tc.warn == "" && got != "" {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
		})
	}
}
