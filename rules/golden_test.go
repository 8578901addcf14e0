package rules

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden listings in testdata")

// TestGoldenListings compiles each testdata/*.cfg and compares the
// listing of every program with testdata/*.prog.
func TestGoldenListings(t *testing.T) {
	files, err := filepath.Glob("testdata/*.cfg")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden configs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			progs, err := Listings(loadCfg(t, string(src)))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, p := range progs {
				b.WriteString(p.Scope + " " + p.Kind + ":\n")
				for _, l := range p.Code {
					b.WriteString("  " + l + "\n")
				}
			}
			golden := strings.TrimSuffix(f, ".cfg") + ".prog"
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Fatalf("listing differs from %s:\n--- got\n%s--- want\n%s", golden, b.String(), want)
			}
		})
	}
}
