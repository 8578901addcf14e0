package config

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// The sizes of a plain Backend and Service: 20,000 and 10,000 of them
// are kept at 10,000 services (issue 36); every setting few of them have
// goes into BackendRare and ServiceRare (512 and 552 bytes before, 192
// with a parser.Span as Locus, Backend 144 with a string as its Kind).
const (
	backendBudget = 128
	serviceBudget = 144
	// patternBudget: two Patterns per URL service (the regex and the
	// literal it reduces to); 128 bytes before.
	patternBudget = 96
	// conditionBudget: a URL, Host or header condition (256 before, 144
	// with a parser.Span as Locus).
	conditionBudget = 96
)

func TestModelSizes(t *testing.T) {
	if n := unsafe.Sizeof(Backend{}); n > backendBudget {
		t.Errorf("Backend is %d bytes, budget %d: put rare settings in BackendRare", n, backendBudget)
	}
	if n := unsafe.Sizeof(Service{}); n > serviceBudget {
		t.Errorf("Service is %d bytes, budget %d: put rare settings in ServiceRare", n, serviceBudget)
	}
	if n := unsafe.Sizeof(Condition{}); n > conditionBudget {
		t.Errorf("Condition is %d bytes, budget %d: put rare settings in ConditionRare", n, conditionBudget)
	}
	if n := unsafe.Sizeof(Pattern{}); n > patternBudget {
		t.Errorf("Pattern is %d bytes, budget %d", n, patternBudget)
	}
}

// TestPlainBackendsShareNoRare: the backends of a file that sets nothing
// rare have no BackendRare of their own; one that sets a rare directive
// has, and nothing else sees it.
func TestPlainBackendsShareNoRare(t *testing.T) {
	cfg, _, err := LoadBytes("t.cfg", []byte(`ListenHTTP
	Address 127.0.0.1
	Port 8080
	Service
		BackEnd
			Address 127.0.0.1
			Port 81
		End
		BackEnd
			Address /run/app.sock
		End
		BackEnd
			Address 127.0.0.3
			Port 82
			ServerName "app.example"
		End
	End
End
`), LoadOptions{NoDNS: true})
	if err != nil {
		t.Fatal(err)
	}
	bs := cfg.Listeners[0].Services[0].Backends
	for i, b := range bs[:2] {
		if b.rare != nil {
			t.Errorf("backend %d: has rare settings %+v, want none", i, *b.rare)
		}
	}
	if got := bs[2].Rare().ServerName; got != "app.example" {
		t.Errorf("ServerName %q, want app.example", got)
	}
	if noRare != (BackendRare{}) {
		t.Errorf("the shared zero rare settings were written: %+v", noRare)
	}
}

// TestPlainServicesShareNoRare: the services of a file that sets nothing
// rare have no ServiceRare of their own, in both dialects.
func TestPlainServicesShareNoRare(t *testing.T) {
	for _, src := range []string{
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort 8080\n\tService \"a\"\n\t\tURL \"^/a/\"\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\nEnd\n",
		"ListenHTTP\n\tAddress 127.0.0.1\n\tPort 8080\n\tService \"a\"\n\t\tHost \"a.example\"\n\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort 81\n\t\tEnd\n\tEnd\nEnd\n",
		zproxyPlain,
	} {
		cfg, _, err := LoadBytes("t.cfg", []byte(src), LoadOptions{NoDNS: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range cfg.Listeners[0].Services {
			if s.rare != nil {
				t.Errorf("%s: service %q has rare settings %+v, want none", cfg.Dialect, s.Name, *s.rare)
			}
			for _, c := range s.Conditions {
				if c.rare != nil {
					t.Errorf("%s: service %q: condition %s has rare settings %+v, want none", cfg.Dialect, s.Name, c.Kind, *c.rare)
				}
			}
		}
	}
	if !reflect.DeepEqual(noServiceRare, ServiceRare{}) {
		t.Errorf("the shared zero rare settings were written: %+v", noServiceRare)
	}
}

// zproxyPlain is a zproxy file of one plain service.
const zproxyPlain = `ListenHTTP
	Address 127.0.0.1
	Port 8080
	Service "a"
		HeadRequire "Host: a.example"
		BackEnd
			Address 127.0.0.1
			Port 81
		End
	End
End
`

// TestSetRareCopyOnWrite: a copy of a Backend shares its rare settings
// until it writes them; the write does not reach the original.
func TestSetRareCopyOnWrite(t *testing.T) {
	orig := &Backend{Address: "a"}
	orig.SetRare().ServerName = "orig"
	cp := *orig
	if cp.Rare() != orig.Rare() {
		t.Fatal("a copy does not share the rare settings")
	}
	cp.SetRare().ServerName = "copy"
	if orig.Rare().ServerName != "orig" || cp.Rare().ServerName != "copy" {
		t.Errorf("ServerName orig %q copy %q, want orig and copy", orig.Rare().ServerName, cp.Rare().ServerName)
	}
	if r := cp.SetRare(); r != cp.Rare() {
		t.Error("a second SetRare made another copy")
	}
}

// TestJSONHasEveryField: the dump's backendJSON and serviceJSON have
// each exported field of the model and its rare part, of the same type,
// and nothing else; a new field must be added there too.
func TestJSONHasEveryField(t *testing.T) {
	tests := []struct {
		name  string
		model []reflect.Type
		dump  reflect.Type
	}{
		{"Backend", []reflect.Type{reflect.TypeFor[Backend](), reflect.TypeFor[BackendRare]()}, reflect.TypeFor[backendJSON]()},
		{"Service", []reflect.Type{reflect.TypeFor[Service](), reflect.TypeFor[ServiceRare]()}, reflect.TypeFor[serviceJSON]()},
		{"Condition", []reflect.Type{reflect.TypeFor[Condition](), reflect.TypeFor[ConditionRare]()}, reflect.TypeFor[conditionJSON]()},
	}
	for _, tc := range tests {
		want := map[string]reflect.Type{}
		for _, ty := range tc.model {
			for f := range ty.Fields() {
				if f.IsExported() && f.Name != "ProtocolPos" && (f.Name != "Pos" || tc.name != "Condition") { // never dumped
					want[f.Name] = f.Type
				}
			}
		}
		got := map[string]reflect.Type{}
		for f := range tc.dump.Fields() {
			got[f.Name] = f.Type
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: dump fields %v\nwant %v", tc.name, got, want)
		}
	}
}

// TestLiteralRegexCompiledOnUse: a regex of literals (^/app1/, as 10,000
// URL services write) costs its Pattern and the literal it reduces to;
// the regex compiles when groups are first asked for, and both cases of
// an icase one match.
func TestLiteralRegexCompiledOnUse(t *testing.T) {
	const n = 2000
	keep := make([]*Pattern, n)
	before := liveBytes()
	for i := range keep {
		p, err := NewPattern(MatchRegex, "^/app1/", false)
		if err != nil {
			t.Fatal(err)
		}
		keep[i] = p
	}
	// The Pattern, its literal and the slice of it: 96+96+8; 248 with
	// the regex's lazy holder made in advance.
	if per := (liveBytes() - before) / n; per > 224 {
		t.Errorf("a literal regex keeps %d bytes, budget 224", per)
	}
	runtime.KeepAlive(keep)
	p, err := NewPattern(MatchRegex, "^/(app)1/", true)
	if err != nil {
		t.Fatal(err)
	}
	if p.lits == nil || p.lazy.Load() != nil {
		t.Fatalf("lits %v, regex compiled %v: want literals and no regex yet", p.lits, p.lazy.Load() != nil)
	}
	first := p.Regexp()
	if m := first.FindStringSubmatch("/APP1/x"); len(m) != 2 || m[1] != "APP" {
		t.Errorf("groups %q, want [/APP1/ APP]", m)
	}
	if again := p.Regexp(); again != first {
		t.Error("the regex compiled twice")
	}
}

func liveBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
