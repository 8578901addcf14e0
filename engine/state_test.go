package engine

import (
	"net"
	"path/filepath"
	"testing"

	"lbd/adminapi"
	"lbd/config"
)

// TestWorkers checks the Pound pool lbd's connections are shown as.
func TestWorkers(t *testing.T) {
	cases := []struct {
		name    string
		active  int
		threads int
		want    adminapi.Workers
	}{
		{name: "idle: the minimum", active: 0, threads: 128, want: adminapi.Workers{Active: 0, Count: 5, Min: 5, Max: 128}},
		{name: "busy: one per connection", active: 9, threads: 128, want: adminapi.Workers{Active: 9, Count: 9, Min: 5, Max: 128}},
		{name: "never above the maximum", active: 300, threads: 128, want: adminapi.Workers{Active: 300, Count: 128, Min: 5, Max: 128}},
		{name: "a maximum below the minimum", active: 0, threads: 2, want: adminapi.Workers{Active: 0, Count: 5, Min: 5, Max: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := workers(tc.active, &config.Config{Threads: tc.threads})
			tc.want.IdleTimeout = poundWorkerIdle
			if got != tc.want {
				t.Errorf("workers = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestBoundAddress checks the address shown for a SocketFrom listener.
func TestBoundAddress(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sock := filepath.Join(t.TempDir(), "s")
	unix, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	cases := []struct {
		name     string
		ln       net.Listener
		wantHost string
		wantPort int
	}{
		{name: "tcp", ln: tcp, wantHost: "127.0.0.1", wantPort: tcp.Addr().(*net.TCPAddr).Port},
		{name: "unix", ln: unix, wantHost: sock, wantPort: 0},
		{name: "not bound", ln: nil, wantHost: "cfg", wantPort: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host, port := boundAddress(tc.ln, "cfg", 7)
			if host != tc.wantHost || port != tc.wantPort {
				t.Errorf("got %s %d, want %s %d", host, port, tc.wantHost, tc.wantPort)
			}
		})
	}
}
