package backend

import (
	"slices"
	"testing"
)

// TestHooksRunInOrderAndLeaveOne: hooks run in the order they were
// added; removing one leaves the others in order; one hook on a backend
// is one allocation of 16 bytes.
func TestHooksRunInOrderAndLeaveOne(t *testing.T) {
	b := New(Options{Address: "127.0.0.1:1"})
	var ran []int
	hooks := make([]*Hook, 3)
	for i := range hooks {
		hooks[i] = NewHook(func() { ran = append(ran, i) })
		b.AddHook(hooks[i])
	}
	steps := []struct {
		name   string
		remove *Hook
		want   []int
	}{
		{"all three", nil, []int{0, 1, 2}},
		{"the middle one removed", hooks[1], []int{0, 2}},
		{"the first one removed", hooks[0], []int{2}},
		{"a hook not there removed", hooks[0], []int{2}},
		{"the last one removed", hooks[2], nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.remove != nil {
				b.RemoveHook(st.remove)
			}
			ran = nil
			b.notify()
			if !slices.Equal(ran, st.want) {
				t.Errorf("hooks ran %v, want %v", ran, st.want)
			}
			if b.HookCount() != len(st.want) {
				t.Errorf("HookCount = %d, want %d", b.HookCount(), len(st.want))
			}
		})
	}
	h := NewHook(func() {})
	if n := testing.AllocsPerRun(100, func() { b.AddHook(h); b.RemoveHook(h) }); n != 1 {
		t.Errorf("adding and removing the one hook: %v allocations, want 1", n)
	}
}
