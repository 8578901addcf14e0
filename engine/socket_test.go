package engine

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"lbd/config"
)

func TestBindKeys(t *testing.T) {
	tcp := func(addr string, port int) *config.Listener { return &config.Listener{Address: addr, Port: port} }
	cases := []struct {
		name string
		ls   []*config.Listener
		want []string
	}{
		{"distinct", []*config.Listener{tcp("127.0.0.1", 80), tcp("127.0.0.1", 81)},
			[]string{"addr:127.0.0.1:80", "addr:127.0.0.1:81"}},
		{"two on port 0", []*config.Listener{tcp("127.0.0.1", 0), tcp("127.0.0.1", 0)},
			[]string{"addr:127.0.0.1:0", "addr:127.0.0.1:0#2"}},
		{"port 0 on other addresses", []*config.Listener{tcp("127.0.0.1", 0), tcp("127.0.0.2", 0), tcp("127.0.0.1", 0), tcp("127.0.0.1", 0)},
			[]string{"addr:127.0.0.1:0", "addr:127.0.0.2:0", "addr:127.0.0.1:0#2", "addr:127.0.0.1:0#3"}},
		{"socket from and unix", []*config.Listener{{SocketFrom: "/s"}, {Address: "/run/a.sock"}},
			[]string{"from:/s", "addr:/run/a.sock"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := bindKeys(tc.ls); !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// twoEphemeral has two listeners on one address, both on Port 0: each
// gets a port of its own, and they share a bindKey.
const twoEphemeral = `ListenHTTP
	Address 127.0.0.1
	Port 0
	Service
		BackEnd
			Address 127.0.0.2
			Port 80
		End
	End
End
ListenHTTP
	Address 127.0.0.1
	Port 0
	Service
		BackEnd
			Address 127.0.0.3
			Port 80
		End
	End
End
`

// TestTwoEphemeralListenersSurviveReload: a reload, and the runtime
// changes that rebuild like one, keep each listener on its own socket,
// and Close then returns (the second socket used to be dropped from the
// engine's list while still served, and Close waited for it forever).
func TestTwoEphemeralListenersSurviveReload(t *testing.T) {
	e, err := New(load(t, twoEphemeral), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	addrs := func() []string {
		var out []string
		for _, a := range e.Addrs() {
			out = append(out, a.String())
		}
		return out
	}
	before := addrs()
	if len(before) != 2 || before[0] == before[1] {
		t.Fatalf("bound %v, want two distinct sockets", before)
	}
	if err := e.Apply(load(t, twoEphemeral)); err != nil {
		t.Fatal(err)
	}
	if err := e.SetLogLevel(1, "0"); err != nil { // a rebuild from the control API
		t.Fatal(err)
	}
	if after := addrs(); !slices.Equal(after, before) {
		t.Errorf("after the reload the listeners are on %v, were on %v", after, before)
	}
	for _, a := range before {
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Errorf("listener %s no longer accepts: %v", a, err)
			continue
		}
		c.Close()
	}
	closed := make(chan struct{})
	go func() { e.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second): // a hang, not a timing claim
		t.Fatal("Close did not return: a listener was left serving")
	}
	for _, a := range before {
		if c, err := net.Dial("tcp", a); err == nil {
			c.Close()
			t.Errorf("%s still accepts after Close", a)
		} else if !strings.Contains(err.Error(), "refused") {
			t.Logf("%s: %v", a, err)
		}
	}
}
