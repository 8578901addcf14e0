package lbctl

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"lbd/adminapi"
)

// poundReply is the body lbd's Pound handler answers GET target with,
// for the fixture with rate limits and password files, with or without
// backend statistics.
func poundReply(t testing.TB, target string, stats bool) []byte {
	t.Helper()
	st := fixture()
	st.BackendStats = stats
	fc := &fakeController{st: st}
	withLimits(fc)
	rec := httptest.NewRecorder()
	adminapi.NewPoundHandler(fc).ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	if rec.Code != 200 {
		t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// sameDecoding fails unless decodePound and encoding/json agree on body:
// the same value, or the same error.
func sameDecoding(t *testing.T, name string, p objPath, body []byte) {
	t.Helper()
	got, gerr := decodePound(p, body)
	want, werr := decodePoundJSON(p, body)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%s: error %v, encoding/json's %v", name, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: decoded\n%#v\nencoding/json:\n%#v", name, got, want)
	}
}

// TestPoundDecoderMatchesJSON checks that lbctl's listing decoder takes
// lbd's replies itself and decodes them as encoding/json does, and that
// the replies it leaves to encoding/json (it cannot tell their result
// exactly) decode the same through decodePound.
func TestPoundDecoderMatchesJSON(t *testing.T) {
	for _, target := range []string{"/listener", "/listener?sessions=count", "/listener/1", "/listener/1/0",
		"/listener/1/0/0", "/listener/-/0", "/listener/1/1/0"} {
		for _, stats := range []bool{false, true} {
			p, err := parsePath(strings.TrimPrefix(strings.Split(target, "?")[0], "/listener"))
			if err != nil {
				t.Fatal(err)
			}
			body := poundReply(t, target, stats)
			if !decodePoundFast(newPoundObject(p), body) {
				t.Errorf("GET %s (stats %v): left to encoding/json", target, stats)
			}
			sameDecoding(t, target, p, body)
		}
	}
	service := objPath{segs: []string{"1", "0"}}
	cases := []struct {
		name string
		p    objPath
		body string
		fast bool // decodePoundFast takes it (strings with escapes or non-ASCII bytes: through encoding/json one by one)
	}{
		{"null name", service, `{"name":null,"backends":null,"sessions":null}`, true},
		{"empty arrays", service, `{"backends":[],"sessions":[],"tbf":[]}`, true},
		{"white space", service, " \t\r\n{ \"name\" : \"x\" , \"enabled\" :true }\n", true},
		{"unknown members", service, `{"parent":{"a":[1,-2.5e3,"\u00e9",true,null,{}]},"x":"y"}`, true},
		{"null object", service, `null`, true},
		{"core kept raw", objPath{}, `{"core": {"pid": 1, "x": [ ]} ,"kind":"pound","core2":1}`, true},
		{"null core", objPath{}, `{"core":null,"listeners":null}`, true},
		{"repeated scalar", service, `{"name":"a","name":"b","enabled":true,"enabled":null}`, true},
		{"repeated stats", objPath{segs: []string{"1", "0", "0"}},
			`{"stats":{"request_count":3},"stats":{"request_time_avg":1.5}}`, true},
		{"floats", objPath{segs: []string{"1", "0", "0"}}, `{"response_time":1e-3,"stats":{"request_time_avg":0}}`, true},
		{"escaped name", service, `{"name":"a\"b\\c\u00e9\n"}`, true},
		{"multi-byte name", service, `{"name":"café"}`, true},
		{"invalid UTF-8 name", service, "{\"name\":\"a\x80b\"}", true},
		{"key in another case", service, `{"Name":"x"}`, false},
		{"unknown key in capitals", service, `{"OTHER":1,"Conn_To":2}`, true},
		{"key in capitals", service, `{"SESSION_TYPE":"x"}`, false},
		{"key with an escape", service, `{"n\u0061me":"x"}`, false},
		{"repeated array", service, `{"backends":[{"alive":true}],"backends":[{"enabled":true}]}`, false},
		{"fraction in an integer", objPath{segs: []string{"1", "0", "0"}}, `{"priority":1.0}`, false},
		{"integer too large", objPath{segs: []string{"1", "0", "0"}}, `{"priority":9223372036854775808}`, false},
		{"negative unsigned", objPath{segs: []string{"1"}}, `{"tbf":[{"burst":-1}]}`, false},
		{"float out of range", objPath{segs: []string{"1", "0", "0"}}, `{"response_time":1e999}`, false},
		{"wrong type", service, `{"enabled":"yes"}`, false},
		{"string for a number", service, `{"session_count":"3"}`, false},
		{"trailing comma", service, `{"name":"x",}`, false},
		{"trailing data", service, `{"name":"x"} x`, false},
		{"two values", service, `{} {}`, false},
		{"leading zero", service, `{"session_count":01}`, false},
		{"bad literal", service, `{"enabled":tru}`, false},
		{"control byte in a string", service, "{\"name\":\"a\x01\"}", false},
		{"bad escape in a skipped string", service, `{"x":"\q"}`, false},
		{"deep nesting", service, `{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, false},
		{"array at the top", service, `[]`, false},
		{"empty", service, ``, false},
	}
	for _, tc := range cases {
		if got := decodePoundFast(newPoundObject(tc.p), []byte(tc.body)); got != tc.fast {
			t.Errorf("%s: taken by poundDecoder %v, want %v", tc.name, got, tc.fast)
		}
		sameDecoding(t, tc.name, tc.p, []byte(tc.body))
	}
}

// FuzzPoundDecoder checks decodePound against encoding/json on any input
// at every depth of path.
func FuzzPoundDecoder(f *testing.F) {
	for _, target := range []string{"/listener", "/listener?sessions=count", "/listener/1/0"} {
		f.Add(uint8(0), poundReply(f, target, true))
	}
	f.Add(uint8(2), []byte(`{"name":"a\"b","backends":[{"stats":{"request_time_avg":1.5e3}}],"x":[{}]}`))
	f.Add(uint8(3), []byte(`{"Priority":1,"priority":2.0}`))
	f.Fuzz(func(t *testing.T, level uint8, body []byte) {
		p := objPath{segs: []string{"1", "0", "0"}[:level%4]}
		sameDecoding(t, "fuzz", p, body)
	})
}

// TestListingRequestsMatchMetrics checks that the numbers ?requests=1
// puts in a listing's backends are the exposition's samples the table
// read before: every backend's request count, and its response time
// where the exposition has one.
func TestListingRequestsMatchMetrics(t *testing.T) {
	for _, stats := range []bool{false, true} {
		o, err := decodePound(objPath{}, poundReply(t, "/listener?sessions=count&requests=1", stats))
		if err != nil {
			t.Fatal(err)
		}
		m := parseBackendMetrics(poundReply(t, "/metrics?family=pound_backend_requests&family=pound_backend_response_time_seconds", stats))
		n, timed := 0, 0
		o.walkBackends(func(p objPath, b *backend) {
			n++
			v := m[metricKey(p.segs)]
			if v == nil || v.requests == nil || b.Requests == nil || *b.Requests != *v.requests {
				t.Errorf("%s (stats %v): requests %v, exposition %+v", p, stats, b.Requests, v)
				return
			}
			if (b.ResponseTime == nil) != (v.respTime == nil) || b.ResponseTime != nil && *b.ResponseTime != *v.respTime {
				t.Errorf("%s (stats %v): response time %v, exposition %v", p, stats, b.ResponseTime, v.respTime)
			}
			if b.ResponseTime != nil {
				timed++
			}
		})
		if n != 6 || timed != 1 {
			t.Errorf("stats %v: %d backends, %d with a response time; want 6, 1", stats, n, timed)
		}
	}
}

// TestListWithoutMetrics checks that lbctl list takes the table's numbers
// from the listing when lbd gives them, and asks GET /metrics for them
// when the server ignores ?requests=1 (Pound, an earlier lbd), with the
// same table either way.
func TestListWithoutMetrics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ignore  bool // the server drops requests=1
		metrics int  // GET /metrics made
	}{{"lbd", false, 0}, {"server without requests=1", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			gets := 0
			h := adminapi.NewPoundHandler(&fakeController{st: fixture()})
			sock := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				if r.URL.Path == "/metrics" {
					gets++
				}
				mu.Unlock()
				if tc.ignore {
					r.URL.RawQuery = strings.ReplaceAll(r.URL.RawQuery, "&requests=1", "")
				}
				h.ServeHTTP(w, r)
			}))
			res := run(nil, "/usr/sbin/lbctl", "-s", sock, "list")
			if res.code != 0 || res.stdout != poundTable {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", res.code, res.stderr, res.stdout, poundTable)
			}
			if gets != tc.metrics {
				t.Errorf("%d GET /metrics, want %d", gets, tc.metrics)
			}
		})
	}
}
