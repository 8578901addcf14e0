package waf

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
)

func td(name string) string { return filepath.Join("testdata", name) }

func TestCompileErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"unknown operator", []string{td("bad_operator.conf")}, "testdata/bad_operator.conf:4: failed to compile the directive \"secrule\": operator nosuchop not found"},
		{"unknown action in an included file", []string{td("includes_bad.conf")}, "testdata/bad_action.conf:3: failed to compile the directive \"secrule\": invalid action \"nosuchaction\""},
		{"missing include", []string{td("includes_missing.conf")}, "testdata/includes_missing.conf:3: can't open testdata/missing.conf: no such file or directory"},
		{"unknown directive", []string{td("unknown_directive.conf")}, "testdata/unknown_directive.conf:3: unknown directive \"secnosuchdirective\""},
		{"duplicate id", []string{td("duplicate_id.conf")}, "testdata/duplicate_id.conf:2: "},
		{"missing top-level file", []string{td("nope.conf")}, "can't open testdata/nope.conf: no such file or directory"},
		{"second file at fault", []string{td("zproxy_style.conf"), td("bad_operator.conf")}, "testdata/bad_operator.conf:4: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.files, Options{})
			if err == nil {
				t.Fatal("compiled")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %q, want prefix %q", err, tc.want)
			}
		})
	}
}

// run feeds one request (and, when respStatus is set, its response)
// through a fresh transaction and returns the first verdict.
func run(t *testing.T, e *Engine, method, uri string, hdr [][2]string, body string, respStatus int, respHdr [][2]string, respBody string) *Verdict {
	t.Helper()
	tx := e.Begin(netip.MustParseAddrPort("192.0.2.7:40000"), netip.MustParseAddrPort("127.0.0.1:80"))
	defer func() {
		if err := tx.Close(); err != nil {
			t.Error(err)
		}
	}()
	tx.RequestLine(method, uri, "HTTP/1.1")
	for _, h := range hdr {
		tx.AddRequestHeader(h[0], h[1])
	}
	if v := tx.RequestHeaders(); v != nil {
		return v
	}
	if body != "" && tx.WantsRequestBody() {
		if v, _, err := tx.WriteRequestBody([]byte(body)); err != nil || v != nil {
			return v
		}
	}
	if v, err := tx.RequestBody(); err != nil || v != nil {
		return v
	}
	if respStatus == 0 {
		return nil
	}
	for _, h := range respHdr {
		tx.AddResponseHeader(h[0], h[1])
	}
	if v := tx.ResponseHeaders(respStatus, "HTTP/1.1"); v != nil {
		return v
	}
	if tx.WantsResponseBody() {
		if v, _, err := tx.WriteResponseBody([]byte(respBody)); err != nil || v != nil {
			return v
		}
	}
	v, err := tx.ResponseBody()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerdictsByPhase(t *testing.T) {
	e, err := Compile([]string{td("zproxy_style.conf")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	octet := [][2]string{{"Content-Type", "application/octet-stream"}}
	for _, tc := range []struct {
		name         string
		method, uri  string
		hdr          [][2]string
		body         string
		respHdr      [][2]string
		respBody     string
		wantStatus   int
		wantLocation string
		wantRule     int
		wantPhase    int
	}{
		{name: "pass", method: "GET", uri: "/", respHdr: octet, respBody: "fine"},
		{name: "deny with status, trailing comment ignored", method: "GET", uri: "/deny/x", wantStatus: 401, wantRule: 2, wantPhase: 1},
		{name: "redirect with status", method: "GET", uri: "/redirect", wantStatus: 307, wantLocation: "https://example.test/", wantRule: 3, wantPhase: 1},
		{name: "ipMatch on X-Forwarded-For", method: "GET", uri: "/", hdr: [][2]string{{"X-Forwarded-For", "10.1.1.5"}}, wantStatus: 403, wantRule: 4, wantPhase: 1},
		{name: "X-Forwarded-For outside the range", method: "GET", uri: "/", hdr: [][2]string{{"X-Forwarded-For", "5.21.8.2"}}, respHdr: octet},
		{name: "request body, redirect defaults to 302", method: "POST", uri: "/", hdr: [][2]string{{"Content-Type", "application/x-www-form-urlencoded"}}, body: "a=an+evilbody+here", wantStatus: 302, wantLocation: "https://example.test/phase2", wantRule: 7, wantPhase: 2},
		{name: "response header", method: "GET", uri: "/", respHdr: [][2]string{{"Location", "/evilhead"}}, wantStatus: 502, wantRule: 8, wantPhase: 3},
		// No SecResponseBodyMimeType: every type is inspected, as in libmodsecurity.
		{name: "response body of any type", method: "GET", uri: "/", respHdr: octet, respBody: "some evilresp", wantStatus: 403, wantRule: 9, wantPhase: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := run(t, e, tc.method, tc.uri, tc.hdr, tc.body, 200, tc.respHdr, tc.respBody)
			if tc.wantStatus == 0 {
				if v != nil {
					t.Fatalf("verdict %v, want pass", v)
				}
				return
			}
			if v == nil {
				t.Fatal("passed")
			}
			if v.Status != tc.wantStatus || v.Location != tc.wantLocation || v.RuleID != tc.wantRule || v.Phase != tc.wantPhase {
				t.Fatalf("verdict %+v, want status %d location %q rule %d phase %d", v, tc.wantStatus, tc.wantLocation, tc.wantRule, tc.wantPhase)
			}
		})
	}
}

func TestBuiltinCRS(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opt        Options
		uri        string
		hdr        [][2]string
		wantStatus int
	}{
		{name: "benign", uri: "/search?q=blue+shoes", hdr: [][2]string{{"Host", "shop.test"}, {"User-Agent", "Mozilla/5.0"}, {"Accept", "text/html"}}},
		{name: "sql injection", uri: "/item?id=1%27%20OR%20%271%27%3D%271", hdr: [][2]string{{"Host", "shop.test"}, {"User-Agent", "Mozilla/5.0"}, {"Accept", "text/html"}}, wantStatus: 403},
		{name: "xss", uri: "/q?x=%3Cscript%3Ealert(1)%3C%2Fscript%3E", hdr: [][2]string{{"Host", "shop.test"}, {"User-Agent", "Mozilla/5.0"}, {"Accept", "text/html"}}, wantStatus: 403},
		// One PL1 warning-level hit scores below a raised threshold.
		{name: "threshold raised", opt: Options{Threshold: 1000}, uri: "/item?id=1%27%20OR%20%271%27%3D%271", hdr: [][2]string{{"Host", "shop.test"}, {"User-Agent", "Mozilla/5.0"}, {"Accept", "text/html"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Compile([]string{CRS}, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			v := run(t, e, "GET", tc.uri, tc.hdr, "", 0, nil, "")
			got := 0
			if v != nil {
				got = v.Status
			}
			if got != tc.wantStatus {
				t.Fatalf("status %d (%v), want %d", got, v, tc.wantStatus)
			}
		})
	}
}

func TestStripTrailingComment(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"after quoted actions", `SecRule A "@rx b" "id:1,deny" # note`, `SecRule A "@rx b" "id:1,deny"`},
		{"hash inside quotes", `SecRule A "@rx a #b" "id:1,msg:'x # y',deny"`, `SecRule A "@rx a #b" "id:1,msg:'x # y',deny"`},
		{"no space before hash", `SecRule A "@rx b" "id:1,deny"#x`, `SecRule A "@rx b" "id:1,deny"#x`},
		{"escaped quote", `SecRule A "@rx \" #" "id:1" #c`, `SecRule A "@rx \" #" "id:1"`},
		{"continuation", "SecRule A \"@rx b\" \"\\\n  id:1,\\\n  deny\" #c", "SecRule A \"@rx b\" \"\\\n  id:1,\\\n  deny\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := normalize(tc.in, 0); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPCREFallback(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"RE2 pattern untouched", `SecRule ARGS "@rx ^a+b$" "id:1,deny"`, `SecRule ARGS "@rx ^a+b$" "id:1,deny"`},
		{"possessive dropped", `SecRule ARGS "@rx a*+;\s++b" "id:1,deny"`, `SecRule ARGS "@rx a*;\s+b" "id:1,deny"`},
		{"escaped plus kept", `SecRule ARGS "@rx \++x" "id:1,deny"`, `SecRule ARGS "@rx \++x" "id:1,deny"`},
		{"plus in a class kept", `SecRule ARGS "@rx [*+]+" "id:1,deny"`, `SecRule ARGS "@rx [*+]+" "id:1,deny"`},
		{"look-behind", `SecRule ARGS "!@rx (?<!&amp);" "id:1,deny"`, `SecRule ARGS "!@lbdrx (?<!&amp);" "id:1,deny"`},
		{"implicit rx with back-reference", `SecRule ARGS "(a)\1" "id:1,deny"`, `SecRule ARGS "@lbdrx (a)\1" "id:1,deny"`},
		{"other operator", `SecRule ARGS "@contains (?<!x)" "id:1,deny"`, `SecRule ARGS "@contains (?<!x)" "id:1,deny"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pcreOperatorLine(tc.in); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestPCREOperatorMatches(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "r.conf")
	rules := "SecRuleEngine On\nSecRule ARGS:q \"@rx (?<!no)thing\" \"id:1,phase:1,deny,status:418\"\n"
	if err := os.WriteFile(f, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Compile([]string{f}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := run(t, e, "GET", "/?q=nothing", nil, "", 0, nil, ""); v != nil {
		t.Fatalf("look-behind ignored: %v", v)
	}
	if v := run(t, e, "GET", "/?q=a+thing", nil, "", 0, nil, ""); v == nil || v.Status != 418 {
		t.Fatalf("verdict %v, want 418", v)
	}
}

func TestLibmodsecurityRequestBodyAndMacros(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "r.conf")
	rules := `SecRuleEngine On
SecRequestBodyAccess On
SecAction "id:1,phase:1,pass,nolog,setvar:'tx.charsets=utf-8|iso-8859-1'"
SecRule REQUEST_HEADERS:Content-Type "@rx charset=([^;\s]+)" "id:2,phase:1,pass,nolog,capture,setvar:tx.cs=%{tx.1}"
SecRule TX:cs "!@rx ^%{tx.charsets}$" "id:4,phase:1,t:lowercase,deny,status:415"
SecRule REQUEST_BODY "@contains java.lang.Runtime" "id:3,phase:2,deny,status:406"
`
	if err := os.WriteFile(f, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Compile([]string{f}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, ctype, body string
		want              int
	}{
		{"charset in the list", "text/plain; charset=utf-8", "x", 0},
		{"charset outside the list", "text/plain; charset=koi8-r", "x", 415},
		{"JSON body in REQUEST_BODY", "application/json", `{"a":"java.lang.Runtime"}`, 406},
		{"multipart body in REQUEST_BODY", "multipart/form-data; boundary=b",
			"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.txt\"\r\n\r\njava.lang.Runtime\r\n--b--\r\n", 406},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := run(t, e, "POST", "/", [][2]string{{"Content-Type", tc.ctype}}, tc.body, 0, nil, "")
			got := 0
			if v != nil {
				got = v.Status
			}
			if got != tc.want {
				t.Fatalf("status %d (%v), want %d", got, v, tc.want)
			}
		})
	}
}

// TestDebugAndAuditLogsAreHonoured: SecDebugLog and SecAuditLog are
// Coraza's and write their files.
func TestDebugAndAuditLogsAreHonoured(t *testing.T) {
	dir := t.TempDir()
	debug, audit := filepath.Join(dir, "debug.log"), filepath.Join(dir, "audit.log")
	rules := "SecRuleEngine On\nSecDebugLog " + debug + "\nSecDebugLogLevel 9\n" +
		"SecAuditEngine On\nSecAuditLogParts ABZ\nSecAuditLogType Serial\nSecAuditLog " + audit + "\n" +
		"SecRule ARGS:a \"@streq x\" \"id:1,phase:1,deny,log\"\n"
	f := filepath.Join(dir, "r.conf")
	if err := os.WriteFile(f, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Compile([]string{f}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := run(t, e, "GET", "/?a=x", nil, "", 0, nil, ""); v == nil {
		t.Fatal("not denied")
	}
	for _, p := range []string{debug, audit} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (empty or missing)", p, err)
		}
	}
}

func TestRXOnRE2(t *testing.T) {
	for _, tc := range []struct {
		name, pattern, value string
		want                 bool
	}{
		{"plain", `^a+b$`, "aaab", true},
		{"multiline", `^b$`, "a\nb\nc", true},
		{"dotall", `a.b`, "a\nb", true},
		{"case-insensitive group", `(?i)<script`, "x<SCRIPT>", true},
		{"no match", `union\s+select`, "unions elect", false},
		{"Latin-1 byte", `\xbc[^\xbe>]*[\xbe>]`, "a\xbcscript\xbe", true},
		{"Latin-1 byte absent", `\xbc[^\xbe>]*[\xbe>]`, "a<script>", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, err := newRX(plugintypes.OperatorOptions{Arguments: tc.pattern})
			if err != nil {
				t.Fatal(err)
			}
			if got := op.(*rxOp).re.MatchString(tc.value); got != tc.want {
				t.Fatalf("match %v, want %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		pattern string
		want    bool
	}{{`\xbc`, true}, {`\x{be}`, true}, {`\x41`, false}, {`\\xbc`, false}, {`abc`, false}} {
		if got := arbitraryBytes(tc.pattern); got != tc.want {
			t.Errorf("arbitraryBytes(%q) = %v, want %v", tc.pattern, got, tc.want)
		}
	}
}

func TestRequestBodyLimit(t *testing.T) {
	for _, tc := range []struct {
		name, action string
		wantStatus   int
		wantFull     bool
	}{
		{"Reject answers 413", "Reject", 413, false},
		{"ProcessPartial inspects the start", "ProcessPartial", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "r.conf")
			rules := "SecRuleEngine On\nSecRequestBodyAccess On\nSecRequestBodyLimit 100\nSecRequestBodyInMemoryLimit 100\nSecRequestBodyLimitAction " + tc.action + "\n"
			if err := os.WriteFile(f, []byte(rules), 0o600); err != nil {
				t.Fatal(err)
			}
			e, err := Compile([]string{f}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tx := e.Begin(netip.MustParseAddrPort("192.0.2.7:40000"), netip.MustParseAddrPort("127.0.0.1:80"))
			defer func() {
				if err := tx.Close(); err != nil {
					t.Error(err)
				}
			}()
			tx.RequestLine("POST", "/", "HTTP/1.1")
			tx.AddRequestHeader("Content-Type", "application/x-www-form-urlencoded")
			if v := tx.RequestHeaders(); v != nil {
				t.Fatal(v)
			}
			v, full, err := tx.WriteRequestBody([]byte("a=" + strings.Repeat("b", 200)))
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			if v != nil {
				got = v.Status
			}
			if got != tc.wantStatus || (v == nil && full != tc.wantFull) {
				t.Fatalf("verdict %v full %v, want status %d full %v", v, full, tc.wantStatus, tc.wantFull)
			}
		})
	}
}

func TestStrictMultipart(t *testing.T) {
	const ct = "multipart/form-data; boundary=b"
	for _, tc := range []struct {
		name, body string
		cut        bool
		want       multipartFault
	}{
		{"well formed", "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"t.txt\"\r\nContent-Type: text/plain\r\n\r\nline1\nline2\r\n--b--\r\n", false, multipartFault{}},
		{"final boundary missing", "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n", false, multipartFault{reqbody: "Multipart: final boundary missing", strict: false}},
		{"cut at the limit is not missing its end", "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nxx", true, multipartFault{}},
		{"attachment", "--b\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--b--\r\n", false, multipartFault{reqbody: "Multipart: invalid Content-Disposition header", strict: true}},
		{"data after", "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--b--\r\nmore\r\n", false, multipartFault{strict: true, after: true}},
		{"folded header", "--b\r\nContent-Disposition: form-data;\r\n name=\"a\"\r\n\r\nx\r\n--b--\r\n", false, multipartFault{strict: true}},
		{"preamble", "hello\r\n--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--b--\r\n", false, multipartFault{strict: true}},
		{"bare LF lines", "--b\nContent-Disposition: form-data; name=\"a\"\n\nx\n--b--\n", false, multipartFault{strict: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkMultipart(ct, []byte(tc.body), tc.cut); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestValidateSchemaOperator: a rule using @validateSchema is refused at
// its file and line, saying so, whether or not the build has Coraza's
// operator (the Makefile's build leaves it out).
func TestValidateSchemaOperator(t *testing.T) {
	_, err := Compile([]string{td("validate_schema.conf")}, Options{})
	want := `testdata/validate_schema.conf:4: failed to compile the directive "secrule": @validateSchema is not supported by lbd (see WafRules in lbd.cfg(5))`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
