package config

import "testing"

// TestBackendKindNames: a kind prints and marshals as the
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
	}
}
