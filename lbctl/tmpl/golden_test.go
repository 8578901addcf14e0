package tmpl

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden runs the templates of testdata on their JSON and compares
// the output with the .golden files (go test -update rewrites them).
func TestGolden(t *testing.T) {
	cases := []struct{ name, template string }{
		{name: "listing", template: "overview"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := "testdata"
			text, err := os.ReadFile(filepath.Join(dir, tc.name+".tmpl"))
			if err != nil {
				t.Fatal(err)
			}
			js, err := os.ReadFile(filepath.Join(dir, tc.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			data, err := FromJSON(js)
			if err != nil {
				t.Fatal(err)
			}
			set := New()
			if err := set.Parse(tc.name+".tmpl", string(text)); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := set.Execute(&b, tc.template, data); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(dir, tc.name+".golden")
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
				t.Errorf("output:\n%s\nwant:\n%s", b.String(), want)
			}
		})
	}
}
