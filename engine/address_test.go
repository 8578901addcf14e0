package engine

import (
	"net"
	"strconv"
	"testing"
	"unsafe"

	"lbd/config"
)

// TestBackendKeyIsTheConcatenation: backendKey, written in one buffer,
// is the key the pieces made (a key that changed would lose every
// backend's state at the first reload after an upgrade).
func TestBackendKeyIsTheConcatenation(t *testing.T) {
	svc := &config.Service{Name: "web"}
	tests := []struct {
		name string
		cb   *config.Backend
	}{
		{"IPv4", &config.Backend{Address: "127.0.0.1", Port: 8080}},
		{"IPv6", &config.Backend{Address: "::1", Port: 443, HTTPS: true}},
		{"a host name", &config.Backend{Address: "app.example", Port: 80, Emergency: true}},
		{"a Unix socket", &config.Backend{Address: "/run/app.sock", Unix: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dial := tc.cb.Address
			if !tc.cb.Unix {
				dial = net.JoinHostPort(tc.cb.Address, strconv.Itoa(tc.cb.Port))
			}
			want := "l0/12:web/" + dial + emergencyTag(tc.cb) + tlsTag(tc.cb) + http2Tag(tc.cb)
			if got := backendKey("l0", 12, svc, tc.cb); got != want {
				t.Errorf("backendKey = %q, want %q", got, want)
			}
		})
	}
}

// TestBackendsShareTheirAddress: the backends of a build at one address
// share its strings.
func TestBackendsShareTheirAddress(t *testing.T) {
	e, _ := newEngineOn(t, sizeConfig(3)) // the feed of cluster events is not looked at
	e.mu.Lock()
	defer e.mu.Unlock()
	var first string
	n := 0
	for _, be := range e.g.backends {
		addr := be.Address()
		if addr != "127.0.0.1:26001" {
			t.Fatalf("a backend at %q", addr)
		}
		if n == 0 {
			first = addr
		} else if unsafe.StringData(addr) != unsafe.StringData(first) {
			t.Errorf("backend %d has a copy of the address", n)
		}
		n++
	}
	if n != 6 {
		t.Errorf("%d backends, want 6", n)
	}
}
