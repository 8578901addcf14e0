package config

import (
	"encoding/json"
)

// DumpJSON renders the normalised model for lbd --dump-config and the
// golden tests: indented, map keys sorted (encoding/json does), struct
// fields in declaration order, durations as seconds, positions as
// FILE:L.C-L.C. File contents (error pages, certificates) are omitted.
func (c *Config) DumpJSON() ([]byte, error) {
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// MarshalJSON writes the locus as Pound's FILE:L.C-L.C.
func (l Locus) MarshalJSON() ([]byte, error) {
	return json.Marshal(l.String())
}
