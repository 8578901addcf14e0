//go:build !race

package proxy

// raceEnabled is false: allocation counts are exact.
const raceEnabled = false
