package rules

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// bearer makes an "Authorization: Bearer" line whose token carries
// payload (signature not checked, so any will do).
func bearer(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return "Authorization: Bearer " + enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
}

func TestLbdAccessors(t *testing.T) {
	cases := []struct {
		name    string
		value   string
		headers []string
		want    string
	}{
		{name: "cookie among others", value: "%[cookie sid]", headers: []string{"Cookie: a=1; sid=abc ; b=2"}, want: "abc"},
		{name: "cookie in a second Cookie line", value: "%[cookie sid]", headers: []string{"Cookie: a=1", "cookie: sid=x"}, want: "x"},
		{name: "cookie quoted", value: "%[cookie sid]", headers: []string{`Cookie: sid="q v"`}, want: "q v"},
		{name: "cookie names are case-sensitive", value: "[%[cookie sid]]", headers: []string{"Cookie: SID=1"}, want: "[]"},
		{name: "no cookie", value: "[%[cookie sid]]", want: "[]"},
		{name: "jwt string claim", value: "%[jwt sub]", headers: []string{bearer(`{"sub":"alice","n":1}`)}, want: "alice"},
		{name: "jwt number claim as written", value: "%[jwt n]", headers: []string{bearer(`{"sub":"a", "n" : 42 }`)}, want: "42"},
		{name: "jwt object claim as written", value: "%[jwt org]", headers: []string{bearer(`{"org":{"id":[1,"}"]},"x":1}`)}, want: `{"id":[1,"}"]}`},
		{name: "jwt escapes undone", value: "%[jwt sub]", headers: []string{bearer(`{"s\u0075b":"a\"b\\c\u00e9\ud83d\ude00"}`)}, want: "a\"b\\c\u00e9\U0001F600"},
		{name: "jwt nested claims are not top-level", value: "[%[jwt sub]]", headers: []string{bearer(`{"o":{"sub":"x"}}`)}, want: "[]"},
		{name: "jwt null is absent", value: "[%[jwt sub]]", headers: []string{bearer(`{"sub":null}`)}, want: "[]"},
		{name: "jwt bearer in any case, padded payload", value: "%[jwt sub]", headers: []string{
			"Authorization: bearer " + base64.URLEncoding.EncodeToString([]byte(`{}`)) + "." +
				base64.URLEncoding.EncodeToString([]byte(`{"sub":"p"}`)) + "."}, want: "p"},
		{name: "jwt not a bearer token", value: "[%[jwt sub]]", headers: []string{"Authorization: Basic dXNlcjpwYXNz"}, want: "[]"},
		{name: "jwt payload not base64", value: "[%[jwt sub]]", headers: []string{"Authorization: Bearer a.!!!.b"}, want: "[]"},
		{name: "jwt payload not an object", value: "[%[jwt sub]]", headers: []string{bearer(`["sub","x"]`)}, want: "[]"},
	}
	var st State
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := compileFirst(t, wrap("", "", fmt.Sprintf("SetHeader %q", "X: "+tc.value)))
			request(&st, p.env, "127.0.0.1", "GET /", tc.headers...)
			if err := p.req.Rewrite(&st, &st.Req); err != nil {
				t.Fatal(err)
			}
			got, _ := st.Req.Header("X")
			if string(got) != tc.want {
				t.Errorf("%s = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

// FuzzJWTClaim reads claims out of arbitrary payloads: never a panic, and
// for a JSON object whose claim is a string, the string encoding/json
// reads.
func FuzzJWTClaim(f *testing.F) {
	for _, s := range []string{`{"sub":"alice"}`, `{"a":[1,{"b":"}"}],"sub":"x\u00e9"}`, `{"sub":1e3}`, `{`, `{"sub"`,
		`{"sub":"\ud800"}`, `  {"x":"\\","sub" :"y"} `, `{"sub":}`, `{"a":"b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		var st State
		st.Begin(st.Client, 0)
		st.Req.Lines = append(st.Req.Lines, []byte(bearer(payload)))
		got, found := st.appendJWTClaim(nil, &st.Req, "sub")
		var obj map[string]any
		// encoding/json turns invalid UTF-8 into U+FFFD; lbd keeps the
		// bytes, which tell different keys apart.
		if !utf8.ValidString(payload) || json.Unmarshal([]byte(payload), &obj) != nil {
			return
		}
		want, isString := obj["sub"].(string)
		// encoding/json keeps the last of duplicate keys, lbd the first.
		if isString && strings.Count(payload, `"sub"`) == 1 && (!found || string(got) != want) {
			t.Fatalf("%s: got %q (found %v), want %q", payload, got, found, want)
		}
	})
}
