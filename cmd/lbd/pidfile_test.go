package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestPIDFileAt: through the directory's descriptor the PID file is
// written whole, removed when it holds this pid, and kept when a
// successor's pid is in it.
func TestPIDFileAt(t *testing.T) {
	tests := []struct {
		name     string
		other    bool // a successor rewrote it before the removal
		wantGone bool
	}{
		{name: "ours is removed", wantGone: true},
		{name: "a successor's stays", other: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "lbd.pid")
			t.Setenv(pidDirFDEnv, "")
			d, err := pidDirFor(path, "/jail")
			if err != nil || d == nil {
				t.Fatalf("pidDirFor: %v, %v", d, err)
			}
			defer d.Close()
			if err := writePIDFileAt(d, path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
				t.Fatalf("PID file %q, %v", b, err)
			}
			if tt.other {
				if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := removePIDFileAt(d, path); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); (err != nil) != tt.wantGone {
				t.Fatalf("after the removal: %v, want gone %v", err, tt.wantGone)
			}
		})
	}
}
