package proxy

import "testing"

func TestServedName(t *testing.T) {
	cases := []struct {
		name, path, want string
		ok               bool
	}{
		{name: "plain", path: "/a.txt", want: "a.txt", ok: true},
		{name: "nested", path: "/d/e/f.txt", want: "d/e/f.txt", ok: true},
		{name: "leading slashes", path: "//a.txt", want: "a.txt", ok: true},
		{name: "percent", path: "/a%20b%2Fc", want: "a b/c", ok: true},
		{name: "dot segment is left to the root", path: "/./a", want: "./a", ok: true},
		{name: "dots in a name", path: "/a..b/...", want: "a..b/...", ok: true},
		{name: "root", path: "/", ok: false},
		{name: "empty", path: "", ok: false},
		{name: "dot-dot", path: "/../x", ok: false},
		{name: "dot-dot inside", path: "/a/../../x", ok: false},
		{name: "dot-dot last", path: "/a/..", ok: false},
		{name: "encoded dot-dot", path: "/%2e%2E/x", ok: false},
		{name: "encoded slash and dot-dot", path: "/a%2f..%2fx", ok: false},
		{name: "NUL", path: "/a%00b", ok: false},
		{name: "short escape", path: "/a%2", ok: false},
		{name: "bad escape", path: "/a%g0", ok: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := servedName([]byte(tc.path))
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("servedName(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
			}
		})
	}
}
