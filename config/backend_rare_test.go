package config

import (
	"reflect"
	"testing"
	"unsafe"
)

// backendBudget is the size of a plain Backend: 20,000 of them are kept
// at 10,000 services (issue 36); every setting few backends have goes
// into BackendRare (512 bytes before).
const backendBudget = 192

func TestBackendSize(t *testing.T) {
	if n := unsafe.Sizeof(Backend{}); n > backendBudget {
		t.Errorf("Backend is %d bytes, budget %d: put rare settings in BackendRare", n, backendBudget)
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

// TestBackendJSONHasEveryField: the dump's backendJSON has each exported
// field of Backend and BackendRare, of the same type, and nothing else;
// a new field must be added there too.
func TestBackendJSONHasEveryField(t *testing.T) {
	want := map[string]reflect.Type{}
	for _, ty := range []reflect.Type{reflect.TypeFor[Backend](), reflect.TypeFor[BackendRare]()} {
		for f := range ty.Fields() {
			if f.IsExported() && f.Name != "ProtocolPos" { // never dumped
				want[f.Name] = f.Type
			}
		}
	}
	got := map[string]reflect.Type{}
	for f := range reflect.TypeFor[backendJSON]().Fields() {
		got[f.Name] = f.Type
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("backendJSON fields %v\nwant %v", got, want)
	}
}
