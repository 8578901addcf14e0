package handoff

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sample is a state with every field set, as an upgrade of a busy lbd
// would write it.
func sample() *State {
	seen := time.Date(2025, 3, 1, 12, 30, 45, 123456789, time.UTC)
	return &State{
		PID: 4242,
		Sockets: []Socket{
			{Index: 0, Kind: KindListener, Key: "addr:127.0.0.1:8080", Name: "web"},
			{Index: 1, Kind: KindListener, Key: "addr:/run/lbd/http.sock"},
			{Index: 2, Kind: KindControl, Key: "control:/run/lbd/control.sock"},
		},
		Listeners: []Listener{{Key: "addr:127.0.0.1:8080", Enabled: true}, {Key: "addr:/run/lbd/http.sock", Enabled: false}},
		Services: []Service{{
			Key: "l0/0:app", Enabled: true,
			Backends: []Backend{
				{Key: "l0/0:app/127.0.0.2:80", Enabled: false, Alive: true},
				{Key: "l0/0:app/127.0.0.3:80", Enabled: true, Alive: false},
			},
			Sessions: []Session{
				{Key: "alice", Backend: "l0/0:app/127.0.0.2:80", LastSeen: seen},
				{Key: "static", Backend: "l0/0:app/127.0.0.3:80"},
				{Key: "\xff\x00bin", Backend: "l0/0:app/127.0.0.3:80", LastSeen: seen},
			},
		}, {Key: "g/0:fallback", Enabled: false}},
		Added:            []AddedBackend{{Service: "l0/0:app", Address: "127.0.0.4", Port: 8081, Weight: 3, Priority: 2, ConnLimit: 10, HTTPS: true}},
		LogLevels:        []LogLevel{{Level: "detailed"}, {Listener: "addr:127.0.0.1:8080", Level: "combined"}},
		DisabledMatrices: []string{"l0/0:app/backend.example:80|all|inet|0|0"},
	}
}

// TestGolden pins the version 1 format: a new binary must keep reading
// what an old one wrote, so the file changes only with the version.
func TestGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "v1.json")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("encoding changed:\n got %s\nwant %s", buf.Bytes(), want)
	}
	got, err := Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	exp := sample()
	exp.Version = Version
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, exp)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"empty", "", "EOF"},
		{"not json", "hello", "invalid character"},
		{"no version", `{"pid":1,"sockets":[]}`, "not a handoff version"},
		{"newer", `{"version":2,"pid":1,"sockets":[]}`, "newer than this binary's 1"},
		{"unknown field", `{"version":1,"pid":1,"sockets":[],"extra":true}`, "unknown field"},
		{"negative index", `{"version":1,"pid":1,"sockets":[{"index":-1,"kind":"listener","key":"a"}]}`, "negative descriptor index"},
		{"twice", `{"version":1,"pid":1,"sockets":[{"index":0,"kind":"listener","key":"a"},{"index":0,"kind":"control","key":"b"}]}`, "listed twice"},
		{"no key", `{"version":1,"pid":1,"sockets":[{"index":0,"kind":"listener","key":""}]}`, "has no key"},
		{"kind", `{"version":1,"pid":1,"sockets":[{"index":0,"kind":"pipe","key":"a"}]}`, "unknown kind"},
		{"two keys", `{"version":1,"pid":1,"sockets":[],"services":[{"key":"s","enabled":true,"sessions":[{"key":"a","key_base64":"YQ==","backend":"b"}]}]}`, "both key and key_base64"},
		{"bad base64", `{"version":1,"pid":1,"sockets":[],"services":[{"key":"s","enabled":true,"sessions":[{"key_base64":"!","backend":"b"}]}]}`, "key_base64"},
		{"keyless session", `{"version":1,"pid":1,"sockets":[],"services":[{"key":"s","enabled":true,"sessions":[{"backend":"b"}]}]}`, "without a key"},
		{"session field", `{"version":1,"pid":1,"sockets":[],"services":[{"key":"s","enabled":true,"sessions":[{"key":"a","backend":"b","x":1}]}]}`, "unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Decode(%q) = %v, want an error containing %q", c.doc, err, c.want)
			}
		})
	}
}

// FuzzDecode: any input either fails to decode or decodes to a state
// that passes the checks and survives another encode/decode unchanged.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := Encode(&buf, sample()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"version":1,"pid":1,"sockets":[]}`))
	f.Add([]byte(`{"version":1,"pid":1,"sockets":[{"index":0,"kind":"control","key":"/x"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := Decode(bytes.NewReader(doc))
		if err != nil {
			return
		}
		if err := s.check(); err != nil {
			t.Fatalf("decoded a state that fails its checks: %v", err)
		}
		var out bytes.Buffer
		if err := Encode(&out, s); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := Decode(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out.Bytes(), err)
		}
		var out2 bytes.Buffer
		if err := Encode(&out2, again); err != nil {
			t.Fatalf("second encode: %v", err)
		}
		if !bytes.Equal(out.Bytes(), out2.Bytes()) {
			t.Fatalf("round trip changed the state:\n%s\n%s", out.Bytes(), out2.Bytes())
		}
	})
}
