package config

import (
	"lbd/parser"
)

// parseFile reads and parses path, Includes resolved against incDir.
func parseFile(path, incDir string) (*parser.File, []*parser.Diagnostic) {
	return parser.ParseFile(path, parser.Options{IncludeDir: incDir})
}

// parseBytes parses src as the file name.
func parseBytes(name string, src []byte, incDir string) (*parser.File, []*parser.Diagnostic) {
	return parser.Parse(name, src, parser.Options{IncludeDir: incDir})
}
