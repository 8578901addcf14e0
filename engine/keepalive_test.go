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
