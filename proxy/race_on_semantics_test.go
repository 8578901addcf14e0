//go:build race

package proxy

// raceEnabled: under -race sync.Pool drops objects at random and the
// regexp machine cache allocates, so allocation counts are meaningless.
const raceEnabled = true
