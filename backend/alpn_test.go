package backend

import (
	"reflect"
	"testing"
)

// TestALPNChoice: the first handshake decides the protocol; later ones
// are offered only it and must agree.
func TestALPNChoice(t *testing.T) {
	tests := []struct {
		name       string
		negotiated []string // ALPN results of successive handshakes
		wantErr    []bool
		offerAfter []string
		h2         bool
	}{
		{"h2 first", []string{"h2", "h2"}, []bool{false, false}, []string{"h2"}, true},
		{"http/1.1 first", []string{"http/1.1", "http/1.1"}, []bool{false, false}, []string{"http/1.1"}, false},
		{"no ALPN answer is HTTP/1.1", []string{"", "http/1.1"}, []bool{false, false}, []string{"http/1.1"}, false},
		{"a backend without h2 after h2", []string{"h2", "", "http/1.1", "h2"}, []bool{false, true, true, false}, []string{"h2"}, true},
		{"h2 after HTTP/1.1", []string{"http/1.1", "h2"}, []bool{false, true}, []string{"http/1.1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a ALPNChoice
			if _, known := a.Known(); known || !reflect.DeepEqual(a.offer(), []string{"h2", "http/1.1"}) {
				t.Fatalf("a new choice is known=%v, offers %v", known, a.offer())
			}
			for i, n := range tt.negotiated {
				if err := a.settle(n); (err != nil) != tt.wantErr[i] {
					t.Errorf("handshake %d (%q): err %v", i, n, err)
				}
			}
			h2, known := a.Known()
			if !known || h2 != tt.h2 || !reflect.DeepEqual(a.offer(), tt.offerAfter) {
				t.Errorf("known %v h2 %v offer %v; want h2 %v offer %v", known, h2, a.offer(), tt.h2, tt.offerAfter)
			}
		})
	}
}

// TestShareALPN: a service's auto backends get one choice, the one some
// kept from the last configuration if any; other backends none.
func TestShareALPN(t *testing.T) {
	kept, fresh, plain := &Backend{rare: &backendRare{auto: &AutoALPN{}}}, &Backend{rare: &backendRare{auto: &AutoALPN{}}}, &Backend{}
	if ShareALPN([]*Backend{plain}) != nil {
		t.Fatal("a choice for a service without auto backends")
	}
	first := ShareALPN([]*Backend{kept})
	first.settle("h2")
	again := ShareALPN([]*Backend{plain, fresh, kept})
	if again != first || fresh.rare.auto.p.Load() != first {
		t.Errorf("the kept choice was not shared: %p %p %p", first, again, fresh.rare.auto.p.Load())
	}
	if h2, known := again.Known(); !h2 || !known {
		t.Errorf("the kept choice lost its decision")
	}
}
