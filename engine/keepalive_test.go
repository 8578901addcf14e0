package engine

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestKernelKeepAliveConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    net.KeepAliveConfig
		wantErr bool
	}{
		{
			name:  "the kernel's defaults",
			files: map[string]string{"tcp_keepalive_time": "7200\n", "tcp_keepalive_intvl": "75\n", "tcp_keepalive_probes": "9\n"},
			want:  net.KeepAliveConfig{Enable: true, Idle: 7200 * time.Second, Interval: 75 * time.Second, Count: 9},
		},
		{
			name:  "tuned values",
			files: map[string]string{"tcp_keepalive_time": "600", "tcp_keepalive_intvl": "10", "tcp_keepalive_probes": "3"},
			want:  net.KeepAliveConfig{Enable: true, Idle: 600 * time.Second, Interval: 10 * time.Second, Count: 3},
		},
		{
			// setsockopt refuses more, and Go reads 0 as its own default.
			name:  "values beyond what a socket takes",
			files: map[string]string{"tcp_keepalive_time": "100000", "tcp_keepalive_intvl": "0", "tcp_keepalive_probes": "500"},
			want:  net.KeepAliveConfig{Enable: true, Idle: 32767 * time.Second, Interval: time.Second, Count: 127},
		},
		{
			name:    "a value missing",
			files:   map[string]string{"tcp_keepalive_time": "7200", "tcp_keepalive_intvl": "75"},
			wantErr: true,
		},
		{
			name:    "a value unreadable",
			files:   map[string]string{"tcp_keepalive_time": "7200", "tcp_keepalive_intvl": "x", "tcp_keepalive_probes": "9"},
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, v := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := kernelKeepAliveConfig(dir)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestWithKernelKeepAliveLeavesOthers: only TCP listeners are wrapped.
func TestWithKernelKeepAliveLeavesOthers(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := withKernelKeepAlive(ln); got != ln {
		t.Fatalf("a UNIX listener became %T", got)
	}
}

// TestKernelKeepAliveAlwaysAccepted backs the comment in Accept: the
// widest and narrowest settings kernelKeepAliveConfig can return are
// taken by a live socket and by one whose peer has reset it.
func TestKernelKeepAliveAlwaysAccepted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, reset := range []bool{false, true} {
		peer, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c, err := ln.(*net.TCPListener).AcceptTCP()
		if err != nil {
			t.Fatal(err)
		}
		if reset {
			peer.(*net.TCPConn).SetLinger(0)
			peer.Close()
			c.Read(make([]byte, 1)) // ECONNRESET: the socket is closed now
		}
		for _, cfg := range []net.KeepAliveConfig{
			{Enable: true, Idle: maxKeepIdle * time.Second, Interval: maxKeepIntvl * time.Second, Count: maxKeepCnt},
			{Enable: true, Idle: time.Second, Interval: time.Second, Count: 1},
		} {
			if err := c.SetKeepAliveConfig(cfg); err != nil {
				t.Errorf("reset %v, %+v: %v", reset, cfg, err)
			}
		}
		c.Close()
		peer.Close()
	}
}
