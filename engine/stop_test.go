package engine

import (
	"errors"
	"sync"
	"testing"
)

// TestCloseDuringRebuilds: control API changes that rebuild the graph
// may arrive while lbd stops (a reload from lbctl, a cluster peer's
// change). Close must not read the graph they swap in unguarded (the race
// detector saw it), and once stopping no rebuild may bind and serve a
// socket nobody will close.
func TestCloseDuringRebuilds(t *testing.T) {
	e, err := New(load(t, twoEphemeral), Options{Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	first := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		levels := []string{"0", "1"}
		for i := 0; i < 500; i++ { // bounded: stops at the first refusal
			err := e.SetLogLevel(-1, levels[i%2])
			if i == 0 {
				close(first)
			}
			if err != nil {
				return
			}
		}
	}()
	<-first
	e.Close()
	wg.Wait()

	more := load(t, twoEphemeral+`ListenHTTP
	Address 127.0.0.1
	Port 0
	Service
		BackEnd
			Address 127.0.0.4
			Port 80
		End
	End
End
`)
	cases := []struct {
		name string
		do   func() error
	}{
		{"reload with a new listener", func() error { return e.Apply(more) }},
		{"log level", func() error { return e.SetLogLevel(0, "combined") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, ErrStopped) {
				t.Errorf("after Close: %v, want ErrStopped", err)
			}
			if n := len(e.Addrs()); n > 2 {
				t.Errorf("after Close %d listeners are bound, the configuration had 2", n)
			}
		})
	}
}
