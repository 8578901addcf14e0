package cache

import (
	"testing"

	"lbd/http1"
)

func TestParseDirectives(t *testing.T) {
	cases := []struct {
		name, value, want string
	}{
		{"max-age", "max-age=60", "max-age=60"},
		{"case and spaces", " MAX-AGE=60 ,  Public ", "max-age=60 public"},
		{"quoted value", `max-age="30"`, "max-age=30"},
		{"first occurrence wins", "max-age=10, max-age=20", "max-age=10"},
		{"invalid max-age is 0", "max-age=abc", "max-age=0"},
		{"missing max-age value is 0", "max-age", "max-age=0"},
		{"negative max-age is 0", "max-age=-1", "max-age=0"},
		{"overflow is capped", "max-age=99999999999999999999", "max-age=2147483648"},
		{"s-maxage", "s-maxage=5, max-age=1", "max-age=1 s-maxage=5"},
		{"max-stale without value", "max-stale", "max-stale=1099511627776"},
		{"stale extensions", "stale-while-revalidate=30, stale-if-error=60", "stale-while-revalidate=30 stale-if-error=60"},
		{"flags", "no-store, no-cache, private, must-revalidate, proxy-revalidate, only-if-cached", "no-store no-cache private must-revalidate proxy-revalidate only-if-cached"},
		{"qualified no-cache counts as no-cache", `no-cache="Set-Cookie, X-Foo", max-age=5`, "max-age=5 no-cache"},
		{"unknown directives ignored", "foo, bar=baz, max-age=1", "max-age=1"},
		{"empty items", ",,max-age=1,,", "max-age=1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := []http1.Header{{Name: []byte("Cache-Control"), Value: []byte(tc.value)}}
			if got := ParseDirectives(h, "Cache-Control").String(); got != tc.want {
				t.Fatalf("%q: got %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

func TestAgeValue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   int64
	}{
		{"none", nil, 0},
		{"valid", []string{"30"}, 30},
		{"float", []string{"1.5"}, deltaMax},
		{"negative", []string{"-1"}, deltaMax},
		{"list", []string{"0, 0"}, deltaMax},
		{"two lines", []string{"0", "0"}, deltaMax},
		{"quoted", []string{`"5"`}, deltaMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hs []http1.Header
			for _, v := range tc.values {
				hs = append(hs, http1.Header{Name: []byte("Age"), Value: []byte(v)})
			}
			if got := ageValue(hs); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func FuzzParseDirectives(f *testing.F) {
	for _, s := range []string{"max-age=60", `no-cache="a,b", s-maxage=1`, "max-stale", `x="\"", max-age=1`, "=,=,", "max-age=99999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d := ParseDirectives([]http1.Header{{Name: []byte("Cache-Control"), Value: []byte(v)}}, "Cache-Control")
		for _, n := range []int64{d.MaxAge, d.SMaxAge, d.MinFresh, d.StaleIfError, d.StaleWhileRevalidate} {
			if n < -1 || n > deltaMax {
				t.Fatalf("%q: value %d out of range", v, n)
			}
		}
	})
}
