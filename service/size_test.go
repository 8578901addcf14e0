package service

import (
	"testing"
	"unsafe"
)

// TestServiceSize: a Service fits the 256-byte size class (312 bytes,
// the 320 class, before): 10,000 services keep 10,000 of them (issue
// 36). What only services with sessions need is in sessionKeys.
func TestServiceSize(t *testing.T) {
	if n := unsafe.Sizeof(Service{}); n > 256 {
		t.Errorf("Service is %d bytes, more than the 256-byte size class", n)
	}
}
