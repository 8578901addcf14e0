package config

import "testing"

// TestBackendKindNames: a kind prints, marshals and reads back as the
// name the dump and the messages have always used.
func TestBackendKindNames(t *testing.T) {
	names := map[BackendKind]string{
		BackendRegular: "backend", BackendRedirect: "redirect", BackendError: "error",
		BackendMetrics: "metrics", BackendControl: "control", BackendDashboard: "dashboard",
		BackendFile: "file", BackendSuccess: "success", BackendLua: "lua", BackendACME: "acme",
	}
	for k, name := range names {
		if k.String() != name {
			t.Errorf("%d prints as %q, want %q", k, k.String(), name)
		}
		text, err := k.MarshalText()
		if err != nil || string(text) != name {
			t.Errorf("%s marshals as %q, %v", name, text, err)
		}
		var back BackendKind
		if err := back.UnmarshalText(text); err != nil || back != k {
			t.Errorf("%q reads back as %v, %v", text, back, err)
		}
	}
	var k BackendKind
	if err := k.UnmarshalText([]byte("nope")); err == nil {
		t.Error("an unknown name reads without an error")
	}
}
