package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that Close leaves no goroutine behind (the Node's own,
// and the Redis client's).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
