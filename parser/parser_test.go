package parser

import (
	"strings"
	"testing"
	"unsafe"
)

// parseString parses src as t.cfg with includes confined to an empty
// in-memory file system.
func parseString(src string) (*File, Diagnostics) {
	return Parse("t.cfg", []byte(src), Options{fsys: newMemFS(nil)})
}

func TestParseTree(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{name: "flat directives, comments, blank lines",
			src:  "# General syntax\nuser \"root\" # inline comment\n\ngroup \"root\"\nDaemon 0\n",
			want: `user "root"; group "root"; Daemon 0`},
		{name: "pound testsuite: general syntax",
			src:  "Service\n\tBackend\n\t\tAddress 127.0.0.1\n\t\tPort 8080\n\tEnd\nEnd\n",
			want: `Service { Backend { Address 127.0.0.1; Port 8080 } }`},
		{name: "keywords and End in any case",
			src:  "listenhttp\n address 1.2.3.4\n SERVICE\n  backend\n   Address 1\n  END\n end\nEnd\n",
			want: `listenhttp { address 1.2.3.4; SERVICE { backend { Address 1 } } }`},
		{name: "listeners, services, backends, emergency, session",
			src: "ListenHTTP \"l\"\nEnd\nListenHTTPS\n Cert \"c.pem\"\nEnd\nService \"s\"\n BackEnd\n  Address a\n End\n" +
				" Emergency\n  Address e\n End\n Session\n  Type COOKIE\n  ID \"sid\"\n End\nEnd\n",
			want: `ListenHTTP "l" { }; ListenHTTPS { Cert "c.pem" }; Service "s" { BackEnd { Address a }; Emergency { Address e }; Session { Type COOKIE; ID "sid" } }`},
		{name: "named backends: definition and use",
			src:  "Backend \"b\"\n Address x\nEnd\nService\n Backend \"b\"\n  Priority 3\n End\n UseBackend \"b\"\nEnd\n",
			want: `Backend "b" { Address x }; Service { Backend "b" { Priority 3 }; UseBackend "b" }`},
		{name: "Match, Not Match, Condition and Not lines",
			src: "Condition \"c\"\n Host \"a\"\nEnd\nService\n Match OR\n  Host \"x\"\n  Not Match AND\n   Path \"/p\"\n  End\n End\n" +
				" Not Header \"h\"\n Not Not Path \"q\"\n Eval \"c\"\nEnd\n",
			want: `Condition "c" { Host "a" }; Service { Match OR { Host "x"; Not Match AND { Path "/p" } }; Not Header "h"; Not Not Path "q"; Eval "c" }`},
		{name: "Rewrite with Else branches",
			src: "Rewrite\n Path \"\\\\.(jpg|gif)$\"\n SetPath \"/images%[path]\"\nElse\n Match AND\n  Host \"example.org\"\n End\n" +
				" SetPath \"/static%[path]\"\nElse\nEnd\nRewrite response\n SetHeader \"X: y\"\nEnd\n",
			want: `Rewrite { Path "\\.(jpg|gif)$"; SetPath "/images%[path]"; Else; Match AND { Host "example.org" }; SetPath "/static%[path]"; Else }; Rewrite response { SetHeader "X: y" }`},
		{name: "ACL: named list at top level, list and reference inside a service",
			src: "ACL \"secure\"\n \"192.0.2.0/26\"\n \"203.0.113.0/24\"\nEnd\nService\n ACL \"secure\"\n ACL\n  \"10.0.0.0/8\"\n End\n" +
				" ACL -forwarded\n  127.0.0.1/8\n End\n Not ACL\n  \"192.0.2.1\"\n End\n Not ACL \"secure\"\nEnd\n",
			want: `ACL "secure" { ="192.0.2.0/26"; ="203.0.113.0/24" }; Service { ACL "secure"; ACL { ="10.0.0.0/8" }; ACL -forwarded { =127.0.0.1/8 }; Not ACL { ="192.0.2.1" }; Not ACL "secure" }`},
		{name: "ACL and TrustedIP read from files are lines",
			src:  "ACL \"f\" -file \"acl.txt\"\nService\n ACL -filewatch \"x\"\n TrustedIP -file \"t\"\nEnd\n",
			want: `ACL "f" -file "acl.txt"; Service { ACL -filewatch "x"; TrustedIP -file "t" }`},
		{name: "TrustedIP list and reference",
			src:  "TrustedIP\n \"127.0.0.1/8\"\nEnd\nListenHTTP\n TrustedIP \"proxies\"\nEnd\n",
			want: `TrustedIP { ="127.0.0.1/8" }; ListenHTTP { TrustedIP "proxies" }`},
		{name: "Control: inline, block at top level, backend inside a service",
			src:  "Control \"/run/pound.sock\"\nControl\n Socket \"/run/p.sock\"\n Mode 660\n ChangeOwner true\nEnd\nService\n Control\nEnd\n",
			want: `Control "/run/pound.sock"; Control { Socket "/run/p.sock"; Mode 660; ChangeOwner true }; Service { Control }`},
		{name: "CombineHeaders, Lua, Resolver with ConfigText, Tunnel",
			src: "CombineHeaders\n \"Accept\"\n Allow\nEnd\nLua\n LoadModule \"m\"\nEnd\nResolver\n ConfigText\n  nameserver 1.1.1.1\n end\n" +
				" CNAMEChain 2\nEnd\nTunnel\n Backend\n End\nEnd\n",
			want: `CombineHeaders { ="Accept"; =Allow }; Lua { LoadModule "m" }; Resolver { ConfigText "  nameserver 1.1.1.1\n" { }; CNAMEChain 2 }; Tunnel { Backend { } }`},
		{name: "Cluster: a block at top level only",
			src:  "Cluster\n Redis \"127.0.0.1:6379\"\n ShareSessions all\nEnd\nService\n Cluster\nEnd\n",
			want: `Cluster { Redis "127.0.0.1:6379"; ShareSessions all }; Service { Cluster }`},
		{name: "unknown keywords are plain lines",
			src:  "FooBar 10\nListenHTTP\n Name env\n WafRules \"w\"\n 127.0.0.1 x\nEnd\n",
			want: `FooBar 10; ListenHTTP { Name env; WafRules "w"; 127.0.0.1 x }`},
		{name: "IncludeDir stays in the tree", src: "IncludeDir \"/\"\n", want: `IncludeDir "/"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, d := parseString(tt.src)
			checkDiags(t, d, nil)
			if got := render(f.Nodes); got != tt.want {
				t.Errorf("tree:\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		want  string // the tree that is still returned
		diags []string
	}{
		{name: "pound testsuite: missing End reported after the last line",
			src:   "# Missing end statement\nService\n\tBackend\n\t\tAddress \"/tmp/pound.sock\"\n\tEnd\n",
			want:  `Service { Backend { Address "/tmp/pound.sock" } }`,
			diags: []string{"t.cfg:5: unexpected end of file"}},
		{name: "two unclosed blocks: one report, after the last line",
			src:   "Service \"s\" # c\n\tBackend\n\t\tAddress x\n",
			want:  `Service "s" { Backend { Address x } }`,
			diags: []string{"t.cfg:3: unexpected end of file"}},
		{name: "stray End at top level", src: "User \"u\"\nEnd\nGroup \"g\"\n",
			want: `User "u"; Group "g"`, diags: []string{"t.cfg:2.1-3: unexpected End"}},
		{name: "arguments after End",
			src:  "Service\nEnd foo\nService\nend 1\nService\nEND \"x\"\nService\nEnd -x\n",
			want: `Service { }; Service { }; Service { }; Service { }`,
			diags: []string{"t.cfg:2.5-7: unexpected identifier", "t.cfg:4.5: unexpected number",
				"t.cfg:6.5-7: unexpected quoted string", "t.cfg:8.5-6: unexpected literal"}},
		{name: "a line must start with a keyword", src: "\"foo\" bar\n80\nUser \"u\"\n",
			want: `User "u"`, diags: []string{"t.cfg:1.1-5: syntax error", "t.cfg:2.1-2: syntax error"}},
		{name: "Include arguments",
			src:  "Include\nInclude foo\nInclude \"a\" \"b\"\nInclude 12\n",
			want: ``,
			diags: []string{"t.cfg:1.1-7: not enough arguments",
				"t.cfg:2.9-11: argument type mismatch: expected string, but found identifier",
				"t.cfg:3.13-15: extra arguments",
				"t.cfg:4.9-10: argument type mismatch: expected string, but found number"}},
		{name: "IncludeDir arguments",
			src:  "IncludeDir\nIncludeDir dir\nIncludeDir \"a\" \"b\"\nIncludeDir \"missing\"\n",
			want: `IncludeDir; IncludeDir dir; IncludeDir "a" "b"; IncludeDir "missing"`,
			diags: []string{"t.cfg:1.1-10: not enough arguments",
				"t.cfg:2.12-14: argument type mismatch: expected string, but found identifier",
				"t.cfg:3.16-18: extra arguments",
				"t.cfg:4.12-20: can't open directory missing: File does not exist"}},
		{name: "every error of a file in one run, warnings in place",
			src:  "User \"root\nService\n URL \"\\.css$\"\n \"x\"\nEnd\nEnd\nListenHTTP\n",
			want: `User "root"; Service { URL "\\.css$" }; ListenHTTP { }`,
			diags: []string{"t.cfg:1.6-10: end of line in quoted string",
				"t.cfg:3.7-9: unrecognized escape sequence",
				"t.cfg:4.2-4: syntax error",
				"t.cfg:6.1-3: unexpected End",
				"t.cfg:7: unexpected end of file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, d := parseString(tt.src)
			checkDiags(t, d, tt.diags)
			checkPositions(t, d)
			if got := render(f.Nodes); got != tt.want {
				t.Errorf("tree:\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

// TestParseSpans checks the positions kept on nodes and arguments.
func TestParseSpans(t *testing.T) {
	src := "Service \"web\"\n\tBackEnd\n\t\tAddress 10.0.0.1\n\tEnd\nEnd\n"
	f, d := Parse("pound.cfg", []byte(src), Options{fsys: newMemFS(nil)})
	checkDiags(t, d, nil)
	svc := f.Nodes[0]
	be := svc.Children[0]
	addr := be.Children[0]
	tests := []struct {
		name string
		got  Span
		want string
	}{
		{name: "block keyword", got: svc.Span, want: "pound.cfg:1.1-7"},
		{name: "block argument", got: svc.Args[0].Span, want: "pound.cfg:1.9-13"},
		{name: "block End", got: svc.EndSpan, want: "pound.cfg:5.1-3"},
		{name: "nested keyword after a tab", got: be.Span, want: "pound.cfg:2.9-15"},
		{name: "nested End", got: be.EndSpan, want: "pound.cfg:4.9-11"},
		{name: "directive keyword", got: addr.Span, want: "pound.cfg:3.17-23"},
		{name: "directive argument", got: addr.Args[0].Span, want: "pound.cfg:3.25-32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got.String(); got != tt.want {
				t.Errorf("span = %s, want %s", got, tt.want)
			}
		})
	}
	if (addr.EndSpan != Span{}) || addr.Block {
		t.Errorf("a plain directive has EndSpan %v and Block %v, want neither", addr.EndSpan, addr.Block)
	}
}

// TestParseAllocs keeps the slab allocation honest: a 5,000-line config
// must not cost an allocation per line.
func TestParseAllocs(t *testing.T) {
	text := strings.ReplaceAll(string(genConfig(250, 4)), `\.css$`, `.css$`) // no warnings
	src, lines := []byte(text), float64(strings.Count(text, "\n"))
	allocs := testing.AllocsPerRun(5, func() {
		if _, d := Parse("a.cfg", src, Options{fsys: newMemFS(nil)}); d.HasErrors() {
			t.Fatal(d.Err())
		}
	})
	if allocs > lines/10 {
		t.Errorf("parsing %v lines allocated %v times, want under %v", lines, allocs, lines/10)
	}
}

// TestTextsAreNotTheFile: no keyword or argument of the tree points into
// the file's bytes, which the scanner reads in place: a configuration
// model keeps names and addresses for as long as it runs, and a
// substring would keep the whole file with it (issue 36). Texts written
// more than once are one string.
func TestTextsAreNotTheFile(t *testing.T) {
	src := []byte("ListenHTTP\n\tAddress 127.0.0.1\n\tPort 80\n" +
		"\tService \"a\"\n\t\tURL \"^/a\\\"b/\"\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 8080\n\t\tEnd\n\tEnd\nEnd\n" +
		"Resolver\n\tConfigText\nnameserver 127.0.0.1\nEnd\nEnd\n")
	f, d := Parse("a.cfg", src, Options{fsys: newMemFS(nil)})
	if d.HasErrors() {
		t.Fatal(d.Err())
	}
	lo, hi := uintptr(unsafe.Pointer(&src[0])), uintptr(unsafe.Pointer(&src[len(src)-1]))
	inFile := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return s != "" && p >= lo && p <= hi
	}
	byText := map[string]string{}
	var walk func([]*Node)
	walk = func(nodes []*Node) {
		for _, n := range nodes {
			texts := []string{n.Keyword}
			for _, a := range n.Args {
				texts = append(texts, a.Text)
			}
			for _, s := range texts {
				if inFile(s) {
					t.Errorf("%s: %q points into the file", n.Span, s)
				}
				if c, ok := byText[s]; ok && unsafe.StringData(c) != unsafe.StringData(s) {
					t.Errorf("%s: %q is a second copy", n.Span, s)
				}
				byText[s] = s
			}
			walk(n.Children)
		}
	}
	walk(f.Nodes)
	for _, want := range []string{"127.0.0.1", `^/a"b/`, "nameserver 127.0.0.1\n"} {
		if _, ok := byText[want]; !ok {
			t.Errorf("%q not in the tree", want)
		}
	}
}
