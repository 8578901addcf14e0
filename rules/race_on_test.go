//go:build race

package rules

// raceEnabled: under -race sync.Pool drops objects at random, so the
// pooled compiler is often new and allocation counts are meaningless.
const raceEnabled = true
