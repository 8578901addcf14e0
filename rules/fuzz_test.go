package rules

import (
	"bytes"
	"strings"
	"testing"

	"lbd/config"
)

// FuzzTemplate parses and expands arbitrary strings: no panic, a string
// without '$' or '%' expands to itself, and a failed expansion always
// says why.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"plain", "/echo%[url", "$1(2/x", "${1}0", "$1(tag)", "%[const a base64]",
		"%[header Host]%[port]", "$$ $% %41 %", "$", "%[", "${", "$9999999999(1)", "%1"} {
		f.Add(s)
	}
	env, err := NewEnv(&config.Config{Constants: map[string]string{"a": "v"}})
	if err != nil {
		f.Fatal(err)
	}
	re, err := config.NewPattern(config.MatchRegex, "^/(a)(b)?", false)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var st State
		st.Begin(st.Client, 0)
		st.Req.URL = []byte("/ab?x=1")
		st.Req.Lines = [][]byte{[]byte("Host: h:1")}
		st.push("tag", re, st.Req.URL)
		out, err := st.expand(env, env.template(s), nil, "fuzz")
		if !strings.ContainsAny(s, "$%") && (err != nil || !bytes.Equal(out, []byte(s))) {
			t.Fatalf("%q expanded to %q, %v", s, out, err)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("an expansion error without a message")
		}
	})
}

// FuzzRules compiles arbitrary service bodies that the config accepts
// and runs them on a request: compiling never fails for a loaded file and
// running never panics.
func FuzzRules(f *testing.F) {
	for _, s := range []string{
		"Path \"^/(.*)\"\nSetPath \"/x/$1\"",
		"Rewrite\n Header \"X\" \"1\"\n SetURL \"/a\"\nElse\n Match OR\n  Path \"/b\"\n End\n DeleteQuery\nEnd",
		"Not Match OR\nEnd\nSetQueryParam \"a\" -encode \"%[path]\"",
		"StringMatch \"%[header Host]\" -icase \"^h\"\nSetHeader \"X: $0\"",
		"ACL\n \"::/0\"\nEnd\nRewrite response\n DeleteHeader \".\"\nEnd",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		cfg, _, err := config.LoadBytes("f.cfg", []byte(wrap("", "", body)), config.LoadOptions{NoDNS: true})
		if err != nil || len(cfg.Listeners) == 0 || len(cfg.Listeners[0].Services) == 0 {
			return
		}
		if _, err := Listings(cfg); err != nil {
			t.Fatalf("a loaded configuration did not compile: %v", err)
		}
		p := compileFirst(t, wrap("", "", body))
		var st State
		request(&st, p.env, "127.0.0.1", "GET /a/b?q=1", "Host: h", "X: 1")
		if ok, err := p.sel.Select(&st); err == nil && ok {
			if p.req.Rewrite(&st, &st.Req) == nil {
				st.Resp.Lines = append(st.Resp.Lines, []byte("Server: s"))
				_ = p.rs.Rewrite(&st, &st.Resp) // the outcome is free; only a panic fails
			}
		}
	})
}
