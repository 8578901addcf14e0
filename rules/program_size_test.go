package rules

import (
	"testing"

	"lbd/config"
)

// TestProgramsOfAPlainService: what a service without rules, constants
// or trusted proxies costs in compiled programs (issue 36: 10,000 such
// services made 20,000 empty programs and 10,000 copies of their Env).
func TestProgramsOfAPlainService(t *testing.T) {
	env, err := NewEnv(&config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("an empty scope is the enclosing Env", func(t *testing.T) {
		if got := env.Scope(nil, nil, ""); got != env {
			t.Error("Scope with nothing to change made a copy")
		}
		if got := env.Scope(map[string]string{"a": "b"}, nil, ""); got == env {
			t.Error("Scope with constants returned the enclosing Env")
		}
	})
	t.Run("no rules compile to nothing", func(t *testing.T) {
		allocs := testing.AllocsPerRun(10, func() {
			p, err := env.CompileRewrite(nil)
			if err != nil || !p.Empty() || p.HasScripts() {
				t.Fatalf("CompileRewrite(nil) = %v, %v; want an empty program", p, err)
			}
		})
		if allocs != 0 {
			t.Errorf("CompileRewrite(nil) made %v allocations, want 0", allocs)
		}
	})
	t.Run("code is kept at its length", func(t *testing.T) {
		p, err := env.CompileSelect([]*config.Condition{{Kind: config.CondMethod, Pattern: &config.Pattern{Kind: config.MatchExact, Text: "GET"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.code) != cap(p.code) {
			t.Errorf("%d instructions in room for %d", len(p.code), cap(p.code))
		}
	})
	t.Run("the code grows in a reused buffer", func(t *testing.T) {
		if raceEnabled {
			t.Skip("-race: sync.Pool drops the pooled compiler at random")
		}
		conds := make([]*config.Condition, 4)
		for i := range conds {
			conds[i] = &config.Condition{Kind: config.CondMethod, Pattern: &config.Pattern{Kind: config.MatchExact, Text: "GET"}}
		}
		if _, err := env.CompileSelect(conds); err != nil { // the buffer
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := env.CompileSelect(conds); err != nil {
				t.Fatal(err)
			}
		})
		// The Program and its code; per condition its leaf and its two
		// patch lists (one allocation); the false list of the conjunction
		// grown twice. 21 before: a compiler of its own, the code grown
		// three times, each patch list an allocation, the first copied.
		if want := float64(2 + 2*len(conds) + 2); allocs > want {
			t.Errorf("CompileSelect made %v allocations, want %v", allocs, want)
		}
	})
}
