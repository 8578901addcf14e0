package rules

import (
	"testing"
	"unsafe"
)

// TestLeafSize: a leaf fits the 128-byte size class (160 bytes before):
// each URL, Host or header condition of 10,000 services compiles to one
// (issue 36).
func TestLeafSize(t *testing.T) {
	if n := unsafe.Sizeof(leaf{}); n > 128 {
		t.Errorf("leaf is %d bytes, more than the 128-byte size class", n)
	}
}
