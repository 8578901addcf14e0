package adminapi

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestFormatReal(t *testing.T) {
	// Expected values are what jansson prints with JSON_REAL_PRECISION(3).
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{name: "zproxy stub", in: -1, want: "-1.0"},
		{name: "zero", in: 0, want: "0.0"},
		{name: "half", in: 0.5, want: "0.5"},
		{name: "rounded to 3 digits", in: 0.012345, want: "0.0123"},
		{name: "integral value", in: 100, want: "100.0"},
		{name: "large uses exponent", in: 1234.5, want: "1.23e3"},
		{name: "small uses exponent", in: 0.0000123, want: "1.23e-5"},
		{name: "small without exponent", in: 0.00025, want: "0.00025"},
		{name: "exponent without mantissa dot", in: 1e21, want: "1e21"},
		{name: "negative exponent", in: -0.00005, want: "-5e-5"},
		{name: "NaN is printed as zero", in: math.NaN(), want: "0.0"},
		{name: "infinity is printed as zero", in: math.Inf(1), want: "0.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatReal(tc.in); got != tc.want {
				t.Errorf("formatReal(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestEncodeStyles(t *testing.T) {
	v := jobject{}.
		add("b", jarray{1, "x", nil}).
		add("a", jobject{}.add("z", true).add("y", jarray{})).
		add("c", jobject{})
	tests := []struct {
		name  string
		style jsonStyle
		want  string
	}{
		{name: "pound compact sorts and spaces members", style: poundCompact,
			want: `{"a":{"y":[], "z":true}, "b":[1, "x", null], "c":{}}`},
		{name: "pound indent", style: poundStyle(2),
			want: "{\n  \"a\": {\n    \"y\": [],\n    \"z\": true\n  },\n  \"b\": [\n    1,\n    \"x\",\n    null\n  ],\n  \"c\": {}\n}"},
		{name: "zproxy compact keeps order", style: zproxyCompact,
			want: `{"b":[1,"x",null],"a":{"z":true,"y":[]},"c":{}}`},
		{name: "zproxy pretty indents by 8", style: zproxyPretty,
			want: "{\n        \"b\": [\n                1,\n                \"x\",\n                null\n        ],\n        \"a\": {\n                \"z\": true,\n                \"y\": []\n        },\n        \"c\": {}\n}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(encodeJSON(v, tc.style)); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestPoundIndentMatchesEncodingJSON checks the indented Pound form against
// encoding/json, which also sorts map keys and prints ": ".
func TestPoundIndentMatchesEncodingJSON(t *testing.T) {
	v := fixture()
	v.BackendStats = true
	tree := newPoundView(v).all()
	for _, indent := range []int{1, 3, 8} {
		var generic any
		if err := json.Unmarshal(encodeJSON(tree, poundCompact), &generic); err != nil {
			t.Fatal(err)
		}
		pad := make([]byte, indent)
		for i := range pad {
			pad[i] = ' '
		}
		want, err := json.MarshalIndent(generic, "", string(pad))
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeJSON(tree, poundStyle(indent)); string(got) != string(want) {
			t.Errorf("indent %d:\n got %s\nwant %s", indent, got, want)
		}
	}
}

func TestJSONString(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "plain", in: "abc", want: `"abc"`},
		{name: "slash and html left alone", in: "/run/a<b>&c", want: `"/run/a<b>&c"`},
		{name: "quotes and backslash", in: `a"b\c`, want: `"a\"b\\c"`},
		{name: "named controls", in: "\b\f\n\r\t", want: `"\b\f\n\r\t"`},
		{name: "other controls", in: "\x01\x1f", want: `"\u0001\u001f"`},
		{name: "utf-8 kept", in: "né", want: `"né"`},
		{name: "invalid utf-8 replaced", in: "a\xffb", want: `"a\ufffdb"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(appendJSONString(nil, tc.in))
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("%s is not valid JSON", got)
			}
		})
	}
}

// TestPlainJSONStrings checks appendJSONString's fast path against the
// escaping one for every single byte and a few mixed strings.
func TestPlainJSONStrings(t *testing.T) {
	in := []string{"", "kind", "127.0.0.1:80", `a"b`, `a\b`, "tab\there", "é", "\xff", "\x7f", "x\x00"}
	for c := 0; c < 256; c++ {
		in = append(in, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)})+"cd")
	}
	for _, s := range in {
		if got, want := string(appendJSONString(nil, s)), string(appendJSONEscaped(nil, s)); got != want {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// TestEncodeSortsCopies: objects printed in key order at every depth
// (nested objects, objects in arrays and lists, one after another at a
// level, whose sorted copies share a buffer) and the objects handed in
// are left as they were built.
func TestEncodeSortsCopies(t *testing.T) {
	inner := func(n int) jobject { return jobject{}.add("z", n).add("a", jobject{}.add("y", 1).add("b", 2)) }
	items := []jobject{inner(1), inner(2), inner(3)}
	tree := jobject{}.
		add("list", jlist{n: len(items), item: func(i int) any { return items[i] }}).
		add("arr", jarray{inner(4), inner(5)}).
		add("obj", inner(6))
	want := `{"arr":[{"a":{"b":2,"y":1},"z":4},{"a":{"b":2,"y":1},"z":5}],` +
		`"list":[{"a":{"b":2,"y":1},"z":1},{"a":{"b":2,"y":1},"z":2},{"a":{"b":2,"y":1},"z":3}],` +
		`"obj":{"a":{"b":2,"y":1},"z":6}}`
	for range 2 { // the second time, from the same (untouched) objects
		if got := string(encodeJSON(tree, poundStyle(0))); strings.ReplaceAll(got, ", ", ",") != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	if tree[0].key != "list" || items[0][0].key != "z" {
		t.Errorf("the objects were sorted in place: %v, %v", tree, items[0])
	}
}
