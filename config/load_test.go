package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"lbd/parser"
)

// load is LoadBytes with DNS off, failing the test on error.
func load(t *testing.T, src string) (*Config, []*parser.Diagnostic) {
	t.Helper()
	cfg, warns, err := LoadBytes("t.cfg", []byte(src), LoadOptions{NoDNS: true})
	if err != nil {
		t.Fatalf("load failed: %v", err)
	}
	return cfg, warns
}

const minimalSrc = "ListenHTTP\n Service\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n"

func TestPoundDefaults(t *testing.T) {
	cfg, _ := load(t, minimalSrc+"ListenHTTPS\n Cert \"../testdata/config/files/server.pem\"\n Service\n  Backend\n   Address 127.0.0.2\n   HTTPS\n  End\n End\nEnd\n")
	l, s := cfg.Listeners[0], cfg.Listeners[0].Services[0]
	be, tlsBe := s.Backends[0], cfg.Listeners[1].Services[0].Backends[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{name: "dialect", got: cfg.Dialect, want: DialectPound},
		{name: "alive", got: cfg.Timeouts.Alive.D(), want: 30 * time.Second},
		{name: "client", got: cfg.Timeouts.Client.D(), want: 10 * time.Second},
		{name: "timeout", got: cfg.Timeouts.TimeOut.D(), want: 15 * time.Second},
		{name: "connto", got: cfg.Timeouts.ConnTO.D(), want: 15 * time.Second},
		{name: "wstimeout", got: cfg.Timeouts.WSTime.D(), want: 600 * time.Second},
		{name: "grace", got: cfg.Grace.D(), want: 30 * time.Second},
		{name: "loglevel", got: cfg.LogLevel, want: "regular"},
		{name: "logfacility", got: cfg.LogFacility, want: "daemon"},
		{name: "daemon", got: cfg.Daemon, want: true},
		{name: "threads", got: cfg.Threads, want: 128},
		{name: "balancer", got: cfg.Balancer, want: "random"},
		{name: "service balancer", got: s.Balancer, want: "random"},
		{name: "header option", got: cfg.HeaderOption, want: []string{"forwarded", "ssl"}},
		{name: "listener header option", got: l.HeaderOption, want: []string{"forwarded", "ssl"}},
		{name: "http port", got: l.Port, want: 80},
		{name: "https port", got: cfg.Listeners[1].Port, want: 443},
		{name: "rewrite location", got: l.RewriteLoc, want: 1},
		{name: "listener client", got: l.Client.D(), want: 10 * time.Second},
		{name: "xhttp", got: l.XHTTP, want: 0},
		{name: "no https11", got: cfg.Listeners[1].TLS.NoHTTPS11, want: 2},
		{name: "backend priority", got: be.Priority, want: 5},
		{name: "backend port", got: be.Port, want: 80},
		{name: "tls backend port", got: tlsBe.Port, want: 443},
		{name: "backend timeout", got: be.TimeOut.D(), want: 15 * time.Second},
		{name: "backend ws timeout", got: be.WSTimeOut.D(), want: 600 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

// TestInheritance checks values resolved after the whole file is read:
// globals written after the listeners still apply.
func TestInheritance(t *testing.T) {
	cfg, _ := load(t, `ListenHTTP
 Service
  Backend
   Address 127.0.0.1
   ConnTO 3
  End
  Emergency
   Address 127.0.0.2
  End
 End
End
Client 7
TimeOut 40
Balancer iwrr
HeaderOption no-ssl
`)
	l := cfg.Listeners[0]
	s := l.Services[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{name: "listener client", got: l.Client.D(), want: 7 * time.Second},
		{name: "backend timeout", got: s.Backends[0].TimeOut.D(), want: 40 * time.Second},
		{name: "backend own connto", got: s.Backends[0].ConnTO.D(), want: 3 * time.Second},
		{name: "emergency timeout", got: s.Rare().Emergency[0].TimeOut.D(), want: 120 * time.Second},
		{name: "emergency flag", got: s.Rare().Emergency[0].Emergency, want: true},
		{name: "balancer", got: s.Balancer, want: "iwrr"},
		{name: "header option", got: l.HeaderOption, want: []string{"forwarded"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestDialect(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want Dialect
	}{
		{name: "plain pound", src: minimalSrc, want: DialectPound},
		{name: "listener name", src: "ListenHTTP\n Name x\n" + minimalSrc[11:], want: DialectZproxy},
		{name: "routing policy alone keeps Pound's dialect", src: "ListenHTTP\n Service\n  RoutingPolicy ROUND_ROBIN\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n", want: DialectPound},
		{name: "weight", src: "ListenHTTP\n Service\n  Backend\n   Address 127.0.0.1\n   Weight 2\n  End\n End\nEnd\n", want: DialectZproxy},
		{name: "cookieinsert", src: "ListenHTTP\n Service\n  Session\n   Type COOKIEINSERT\n   TTL 5\n  End\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n", want: DialectZproxy},
		{name: "pound path condition", src: "ListenHTTP\n Service\n  Path \"/x\"\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n", want: DialectPound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := load(t, tc.src)
			if cfg.Dialect != tc.want {
				t.Errorf("got %s, want %s", cfg.Dialect, tc.want)
			}
		})
	}
}

func TestDialectForcedByCommandLine(t *testing.T) {
	cfg, _, err := LoadBytes("t.cfg", []byte(minimalSrc), LoadOptions{NoDNS: true, Dialect: DialectZproxy, DialectWhy: "started with -C"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dialect != DialectZproxy || cfg.DialectReason != "started with -C" {
		t.Errorf("dialect %s (%s)", cfg.Dialect, cfg.DialectReason)
	}
	if got := cfg.Listeners[0].Services[0].RoutingPolicy; got != "ROUND_ROBIN" {
		t.Errorf("routing policy %q, want zproxy's default ROUND_ROBIN", got)
	}
}

// TestServiceAlgorithm: a service's own Balancer or RoutingPolicy wins
// over the file's dialect, and only that service changes.
func TestServiceAlgorithm(t *testing.T) {
	svc := func(extra, be string) string {
		return " Service\n" + extra + "  Backend\n   Address 127.0.0.1\n" + be + "  End\n  Backend\n   Address 127.0.0.2\n  End\n End\n"
	}
	tests := []struct {
		name             string
		src              string
		balancer, policy []string // per service
		priorities       [][]int  // per service, per backend
	}{
		{
			name:       "Pound file: one RoutingPolicy service, the other keeps the global Balancer",
			src:        "Balancer iwrr\nListenHTTP\n" + svc("  RoutingPolicy LEAST_CONNECTIONS\n", "") + svc("", "") + "End\n",
			balancer:   []string{"", "iwrr"},
			policy:     []string{"LEAST_CONNECTIONS", ""},
			priorities: [][]int{{1, 1}, {5, 5}},
		},
		{
			name:       "Pound file: an explicit tier is kept",
			src:        "ListenHTTP\n" + svc("  RoutingPolicy ROUND_ROBIN\n", "   Priority 2\n") + "End\n",
			balancer:   []string{""},
			policy:     []string{"ROUND_ROBIN"},
			priorities: [][]int{{2, 1}},
		},
		{
			name:       "zproxy file: a Balancer service is Pound's",
			src:        "ListenHTTP\n Name z\n" + svc("  Balancer iwrr\n", "") + svc("", "") + "End\n",
			balancer:   []string{"iwrr", ""},
			policy:     []string{"", "ROUND_ROBIN"},
			priorities: [][]int{{1, 1}, {1, 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := load(t, tc.src)
			for i, s := range cfg.Listeners[0].Services {
				if s.Balancer != tc.balancer[i] || s.RoutingPolicy != tc.policy[i] {
					t.Errorf("service %d: Balancer %q RoutingPolicy %q, want %q %q", i, s.Balancer, s.RoutingPolicy, tc.balancer[i], tc.policy[i])
				}
				for j, be := range s.Backends {
					if be.Priority != tc.priorities[i][j] {
						t.Errorf("service %d backend %d: priority %d, want %d", i, j, be.Priority, tc.priorities[i][j])
					}
				}
			}
		})
	}
}

func TestZproxyDefaults(t *testing.T) {
	cfg, warns := load(t, "ListenHTTP\n Name env\n Service \"s\"\n  URL \"/a(\\d)\"\n  Backend\n   Address 127.0.0.1\n  End\n End\n Service \"empty\"\n End\nEnd\n")
	s := cfg.Listeners[0].Services[0]
	if got := s.Backends[0].Priority; got != 1 {
		t.Errorf("zproxy backend priority %d, want 1", got)
	}
	if s.RoutingPolicy != "ROUND_ROBIN" {
		t.Errorf("routing policy %q, want ROUND_ROBIN", s.RoutingPolicy)
	}
	if !s.Conditions[0].Pattern.IgnoreCase {
		t.Error("zproxy URL patterns are case-insensitive")
	}
	if len(warns) != 0 {
		t.Errorf("zproxy config with \\d and an empty service warned: %v", warns)
	}
}

func TestUnsupportedRecorded(t *testing.T) {
	cfg, warns := load(t, "ThreadModel dynamic\nThreadModel static\nDHParams \"x\"\n"+minimalSrc)
	if want := []string{"ThreadModel", "DHParams"}; !reflect.DeepEqual(cfg.Unsupported, want) {
		t.Errorf("Unsupported = %v, want %v", cfg.Unsupported, want)
	}
	if len(warns) != 3 {
		t.Fatalf("%d warnings, want one per statement (3)", len(warns))
	}
	if got := warns[0].Error(); got != `t.cfg:1.1-11: warning: "ThreadModel" has no effect in lbd` {
		t.Errorf("warning text %q", got)
	}
}

// TestAllErrorsReported checks that one run reports every error and that
// each is a positioned diagnostic.
func TestAllErrorsReported(t *testing.T) {
	src := "Bogus1\nListenHTTP\n Bogus2\n xHTTP 99\n Service\n  Bogus3\n  Backend\n  End\n End\nEnd\nBogus4\n"
	cfg, _, err := LoadBytes("t.cfg", []byte(src), LoadOptions{NoDNS: true})
	if cfg != nil || err == nil {
		t.Fatalf("want a failure, got cfg=%v err=%v", cfg != nil, err)
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("error is not a join: %T", err)
	}
	errs := joined.Unwrap()
	if len(errs) != 6 {
		t.Fatalf("%d errors, want 6:\n%v", len(errs), err)
	}
	for _, e := range errs {
		var d *parser.Diagnostic
		if !errors.As(e, &d) || d.Span.Start.Line == 0 {
			t.Errorf("error without a position: %v", e)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	cfg, _, err := Load("../testdata/config/files/does-not-exist.cfg", LoadOptions{})
	if cfg != nil || err == nil || !strings.Contains(err.Error(), "No such file or directory") {
		t.Errorf("got cfg=%v err=%v", cfg != nil, err)
	}
}

func TestDNS(t *testing.T) {
	tests := []struct {
		name       string
		listen     string // listener address ("" = none)
		addr       string // backend address
		opts       LoadOptions
		err, warn  string
		unresolved bool
	}{
		{name: "localhost resolves", addr: "localhost"},
		{name: "no-dns skips lookup", addr: "no-such-host.invalid", opts: LoadOptions{NoDNS: true}},
		{name: "unresolvable backend warns", addr: "no-such-host.invalid",
			warn: "cannot resolve host name no-such-host.invalid", unresolved: true},
		{name: "unresolvable listener fails", listen: "no-such-host.invalid", addr: "127.0.0.1",
			err: "bad listener address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "ListenHTTP\n"
			if tc.listen != "" {
				src += " Address " + tc.listen + "\n"
			}
			src += " Service\n  Backend\n   Address " + tc.addr + "\n  End\n End\nEnd\n"
			cfg, warns, err := LoadBytes("t.cfg", []byte(src), tc.opts)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
			if got := diagText(warns, nil); !strings.Contains(string(got), tc.warn) || tc.warn == "" && len(got) > 0 {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
			if cfg != nil && cfg.Listeners[0].Services[0].Backends[0].Unresolved != tc.unresolved {
				t.Errorf("Unresolved = %v, want %v", !tc.unresolved, tc.unresolved)
			}
		})
	}
}

// TestLuaWithoutLua checks that an lbd built without Lua refuses every
// Lua statement where it is written, instead of ignoring it.
func TestLuaWithoutLua(t *testing.T) {
	svc := func(stmt string) string {
		return "ListenHTTP\n Service\n  " + stmt + "\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n"
	}
	cases := []struct{ name, src, want string }{
		{"Lua section", "Lua\n Load \"x.lua\"\nEnd\n", `t.cfg:1.1-3: "Lua": this lbd was built without Lua`},
		{"LuaMatch", svc(`LuaMatch "f"`), `t.cfg:3.3-10: "LuaMatch": this lbd was built without Lua`},
		{"LuaModify", svc(`LuaModify "f" "a"`), `t.cfg:3.3-11: "LuaModify": this lbd was built without Lua`},
		{"LuaModify in a listener", "ListenHTTP\n LuaModify \"f\"\n Service\n  Backend\n   Address 127.0.0.1\n  End\n End\nEnd\n",
			`t.cfg:2.2-10: "LuaModify": this lbd was built without Lua`},
		{"LuaBackend", "ListenHTTP\n Service\n  LuaBackend \"f\"\n End\nEnd\n", `t.cfg:3.3-12: "LuaBackend": this lbd was built without Lua`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadBytes("t.cfg", []byte(tc.src), LoadOptions{NoDNS: true, NoLua: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("zproxy dialect", func(t *testing.T) {
		_, _, err := LoadBytes("t.cfg", []byte(svc(`LuaMatch "f"`)), LoadOptions{NoDNS: true, Dialect: DialectZproxy})
		if want := `t.cfg:3.3-10: "LuaMatch" is a Pound 4 statement: not available in the zproxy dialect`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})
}

func TestNotImplementedIsAnError(t *testing.T) {
	cases := []struct{ name, src, want string }{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadBytes("t.cfg", []byte(tc.src), LoadOptions{NoDNS: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestKeywordsFoldASCIIOnly: keywords match without regard to ASCII case
// only, as Pound's do: "Uſe" (a long s, which Unicode folds to s) is an
// unknown keyword, not Use.
func TestKeywordsFoldASCIIOnly(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"Use in upper case", "Backend \"b1\"\n Address 127.0.0.1\n Port 80\nEnd\nListenHTTP\n Service\n  BackEnd\n   USE \"b1\"\n  End\n End\nEnd\n", ""},
		{"Use with a long s", "Backend \"b1\"\n Address 127.0.0.1\n Port 80\nEnd\nListenHTTP\n Service\n  BackEnd\n   Uſe \"b1\"\n  End\n End\nEnd\n",
			`t.cfg:8.4-7: unrecognized keyword`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadBytes("t.cfg", []byte(tc.src), LoadOptions{NoDNS: true})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
