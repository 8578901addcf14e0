package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compatDir holds real Pound/zproxy configurations (see its README).
const compatDir = "../../shared/compat-configs"

// TestCompatConfigs loads every configuration of the shared corpus: all
// must load with nothing but "has no effect" warnings, except the one
// zproxy itself rejects for a backend listed twice in one service. The
// WAF ones load with their rule files compiled.
func TestCompatConfigs(t *testing.T) {
	if _, err := os.Stat(compatDir); err != nil {
		t.Skipf("compat corpus not available at %s: %v", compatDir, err)
	}
	var files []string
	err := filepath.WalkDir(compatDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".cfg") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("only %d configs under %s", len(files), compatDir)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			cfg, warns, err := Load(path, LoadOptions{NoDNS: true})
			if name == "backend_collision_same_srv__zproxy.cfg" {
				if err == nil || !strings.Contains(err.Error(), "duplicate backend 127.0.2.1:80") {
					t.Fatalf("want a duplicate backend error, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("load failed:\n%v", err)
			}
			if src, rerr := os.ReadFile(path); rerr != nil {
				t.Fatal(rerr)
			} else if strings.Contains(string(src), "\tWafRules") {
				for _, l := range cfg.Listeners {
					if l.WAF == nil || l.WAF.Engine == nil {
						t.Errorf("listener at %s has no compiled WAF", l.Pos)
					}
				}
			}
			for _, w := range warns {
				if !strings.HasSuffix(w.Msg, "has no effect in lbd") {
					t.Errorf("unexpected warning: %s", w.Error())
				}
			}
			if strings.Contains(name, "__zproxy") && cfg.Dialect != DialectZproxy {
				t.Errorf("dialect %s, want zproxy", cfg.Dialect)
			}
		})
	}
}
