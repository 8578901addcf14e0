package routeindex

import (
	"fmt"
	"testing"

	"lbd/config"
)

// buildAllocsBudget is what Build may allocate for 1,000 URL prefix
// services (^/appN/): a load builds the index once, and what it drops as
// small objects is left among the small objects the build keeps (issue
// 36). It was 7,434 allocations: a node and an edge list per byte of a
// new prefix, and a folded copy of every text; 3,437 now.
const buildAllocsBudget = 3500

func TestBuildAllocations(t *testing.T) {
	services := make([][]*config.Condition, 1000)
	for i := range services {
		services[i] = []*config.Condition{cond(t, config.CondURL, config.MatchRegex, fmt.Sprintf("^/app%d/", i), false)}
	}
	if ix := Build(services); ix == nil || len(offered(ix, "-", "/app999/x", 0)) != 1 {
		t.Fatal("the index does not offer /app999/'s service alone")
	}
	allocs := testing.AllocsPerRun(3, func() { Build(services) })
	t.Logf("%v allocations", allocs)
	if allocs > buildAllocsBudget {
		t.Errorf("Build made %v allocations, budget %d", allocs, buildAllocsBudget)
	}
}
