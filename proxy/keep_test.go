package proxy

import "testing"

func TestRebase(t *testing.T) {
	from := []byte("POST http://victim HTTP/1.1\r\n")[:29:29] // head ends at the end of its array
	to := append([]byte(nil), from...)
	static := []byte("/")[:1:1] // like http1's Path for an empty absolute-form path
	cases := []struct {
		name   string
		s      []byte
		wantTo bool // re-pointed into to
	}{
		{"slice of from", from[5:18], true},
		{"empty slice inside from", from[3:3], true},
		{"slice of another array whose end lines up", static, false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rebase(tc.s, from, to)
			if string(got) != string(tc.s) {
				t.Fatalf("content changed: %q -> %q", tc.s, got)
			}
			inTo := cap(got) > 0 && cap(got) <= len(to) && &got[:1][0] == &to[:cap(to)][len(to)-cap(got)]
			if inTo != tc.wantTo {
				t.Fatalf("re-pointed into the copy: %v, want %v", inTo, tc.wantTo)
			}
		})
	}
}
