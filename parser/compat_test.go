package parser

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compatDir holds real Pound and zproxy configurations (see its README).
const compatDir = "../../shared/compat-configs"

// compatConfigs lists every *.cfg file under compatDir, skipping the test
// when the directory is not there (a checkout without the shared data).
func compatConfigs(t testing.TB) []string {
	if _, err := os.Stat(compatDir); err != nil {
		t.Skipf("compat configs not available at %s: %v", compatDir, err)
	}
	var files []string
	err := filepath.WalkDir(compatDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".cfg") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no *.cfg files under %s", compatDir)
	}
	return files
}

// TestCompatConfigs parses every real-world configuration: none may have
// a syntax error (warnings, such as Pound's for "\d" in a regex, are fine)
// and every one must yield a tree with its listener in it.
func TestCompatConfigs(t *testing.T) {
	for _, path := range compatConfigs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, d := ParseFile(path, Options{})
			if err := d.Err(); err != nil {
				t.Fatalf("errors:\n%v", err)
			}
			checkPositions(t, d)
			listeners := 0
			for _, n := range f.Nodes {
				if n.Is("ListenHTTP") || n.Is("ListenHTTPS") {
					listeners++
				}
			}
			if listeners == 0 {
				t.Errorf("no listener found in %s", render(f.Nodes))
			}
		})
	}
}
