//go:build race

package config

// raceEnabled: under -race sync.Pool drops objects at random, so the
// regexp machine cache allocates and allocation counts are meaningless.
const raceEnabled = true
