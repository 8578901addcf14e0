package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigConfig writes a configuration with services × backends, each service
// with a URL condition, and returns its path.
func bigConfig(tb testing.TB, services, backends int) string {
	tb.Helper()
	var sb strings.Builder
	sb.WriteString("Daemon 0\nLogLevel 1\nTimeOut 20\n\nListenHTTP\n\tAddress 127.0.0.1\n\tPort 8080\n")
	for s := 0; s < services; s++ {
		fmt.Fprintf(&sb, "\tService \"svc%d\"\n\t\tURL \"^/s%d/\"\n", s, s)
		for i := 0; i < backends; i++ {
			fmt.Fprintf(&sb, "\t\tBackend\n\t\t\tAddress 10.%d.%d.%d\n\t\t\tPort %d\n\t\tEnd\n", s>>8&255, s&255, i+1, 8000+i)
		}
		sb.WriteString("\tEnd\n")
	}
	sb.WriteString("End\n")
	path := filepath.Join(tb.TempDir(), "big.cfg")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkLoad10kServices parses, builds and validates 10,000 services
// with 4 backends each (~230k lines); the budget is well under 1 s/op.
func BenchmarkLoad10kServices(b *testing.B) {
	path := bigConfig(b, 10000, 4)
	b.ReportAllocs()
	for b.Loop() {
		cfg, _, err := Load(path, LoadOptions{NoDNS: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(cfg.Listeners[0].Services) != 10000 {
			b.Fatal("services lost")
		}
	}
}

// TestBigConfig checks the benchmark's input loads completely, so the
// benchmark measures a successful load.
func TestBigConfig(t *testing.T) {
	cfg, warns, err := Load(bigConfig(t, 300, 4), LoadOptions{NoDNS: true})
	if err != nil || len(warns) != 0 {
		t.Fatalf("err %v, warnings %v", err, warns)
	}
	n := 0
	for _, s := range cfg.Listeners[0].Services {
		n += len(s.Backends)
	}
	if n != 1200 {
		t.Errorf("%d backends, want 1200", n)
	}
}
