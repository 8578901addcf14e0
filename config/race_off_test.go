//go:build !race

package config

// raceEnabled reports a -race build; see race_on_test.go.
const raceEnabled = false
