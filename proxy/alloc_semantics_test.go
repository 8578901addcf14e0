package proxy

import (
	"io"
	"strings"
	"testing"
)

// allocVariant changes the memory proxy of alloc_test.go: logging on,
// header rules, a Location to rewrite.
type allocVariant struct {
	name  string
	setup func(t testing.TB, st *Listener)
	resp  string
}

var locationResponse = "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/next\r\nContent-Length: 0\r\n\r\n"

func allocVariants() []allocVariant {
	return []allocVariant{
		{name: "logging off", setup: func(testing.TB, *Listener) {}},
		{name: "detailed log to io.Discard", setup: func(_ testing.TB, st *Listener) {
			st.Log = &AccessLog{Format: LogDetailed, Out: io.Discard, Prefix: "pound: "}
		}},
		{name: "every canned field and a custom format", setup: func(t testing.TB, st *Listener) {
			prog, err := CompileLogFormat("all", "%a %A %b %B %D %h %H %{Host}i %{Cookie}I %l %{backend}N "+
				"%{service}N %m %p %q %r %s %>s %t %{%d/%m/%Y}t %{usec}t %T %{f}T %u %U %v")
			if err != nil {
				t.Fatal(err)
			}
			st.Log = &AccessLog{Prog: prog, Out: io.Discard, Anonymise: true}
		}},
		{name: "SetHeader and DeleteHeader", setup: func(t testing.TB, st *Listener) {
			withRules(t, st, "ListenHTTP\n\tSetHeader \"X-Via: lbd\"\n\tSetHeader \"Accept: */*\"\n"+
				"\tDeleteHeader \"^Cookie:\"\n\tService\n\t\tBackend\n\t\t\tAddress 127.0.0.1\n\t\tEnd\n\tEnd\nEnd\n")
		}},
		{name: "RewriteLocation to the backend", resp: locationResponse, setup: func(_ testing.TB, st *Listener) {
			for svc := range st.SvcEdits {
				st.SvcEdits[svc].loc = 1
			}
		}},
		{name: "zproxy dialect with its header rules", resp: locationResponse, setup: func(t testing.TB, st *Listener) {
			withRules(t, st, zproxyEdits)
		}},
	}
}

// zproxyEdits are zproxy header and URL directives whose patterns do not
// capture (a replacement with groups allocates its match indexes).
const zproxyEdits = `ListenHTTP
	Name z
	Address 127.0.0.1
	Port 80
	RewriteLocation 1
	AddRequestHeader "X-Via: lbd"
	RemoveRequestHeader "^Cookie:"
	AddResponseHeader "X-Served: 1"
	RemoveResponseHeader "^Server:"
	Service
		RewriteUrl "^/nothing" "/else"
		StrictTransportSecurity 60
		BackEnd
			Address 127.0.0.1
			Port 1
		End
	End
End
`

func TestRequestCycleVariantsDoNotAllocate(t *testing.T) {
	for _, v := range allocVariants() {
		t.Run(v.name, func(t *testing.T) {
			resp := benchResponse
			if v.resp != "" {
				resp = v.resp
			}
			be := &memConn{reply: []byte(resp)}
			c, st, client := newMemProxy(t, be)
			v.setup(t, st)
			client.in = []byte(benchRequest)
			if !cycle(c, st, client) {
				t.Fatal("first cycle failed")
			}
			allocs := testing.AllocsPerRun(500, func() {
				if !cycle(c, st, client) {
					t.Fatal("cycle failed")
				}
			})
			if allocs != 0 && !raceEnabled {
				t.Fatalf("request cycle allocates %.1f times per request, want 0", allocs)
			}
		})
	}
}

func TestLocationRewrittenInCycle(t *testing.T) {
	be := &memConn{reply: []byte(locationResponse)}
	c, st, client := newMemProxy(t, be)
	for svc := range st.SvcEdits {
		st.SvcEdits[svc].loc = 1
	}
	client.in = []byte(benchRequest)
	client.keep = true
	if !cycle(c, st, client) {
		t.Fatal("cycle failed")
	}
	want := "Location: http://www.example.com/next\r\n"
	if got := string(client.out); !containsStr(got, want) {
		t.Errorf("client got %q, want a %q line", got, want)
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// BenchmarkRequestCycleLogging measures the hot path with the access log
// off and on (the numbers quoted in the issue report).
func BenchmarkRequestCycleLogging(b *testing.B) {
	for _, v := range allocVariants()[:3] {
		b.Run(v.name, func(b *testing.B) {
			be := &memConn{reply: []byte(benchResponse)}
			c, st, client := newMemProxy(b, be)
			v.setup(b, st)
			client.in = []byte(benchRequest)
			b.ReportAllocs()
			for b.Loop() {
				if !cycle(c, st, client) {
					b.Fatal("cycle failed")
				}
			}
		})
	}
}

// TestZproxyEditsInCycle: the zproxy variant of the allocation test does
// edit what the backend and the client get (its zero is not a no-op).
func TestZproxyEditsInCycle(t *testing.T) {
	be := &memConn{reply: []byte(locationResponse), keep: true}
	c, st, client := newMemProxy(t, be)
	withRules(t, st, zproxyEdits)
	client.in = []byte(benchRequest)
	client.keep = true
	if !cycle(c, st, client) {
		t.Fatalf("cycle failed; client got %q", client.out)
	}
	sent, got := string(be.out), string(client.out)
	if !strings.HasSuffix(sent, "Accept-Encoding: gzip, deflate\r\nX-Forwarded-For: 127.0.0.1\r\nX-Via: lbd\r\n\r\n") ||
		strings.Contains(sent, "Cookie:") {
		t.Errorf("backend got %q", sent)
	}
	want := "HTTP/1.1 302 Found\r\nContent-Length: 0\r\nLocation: http://www.example.com/next\r\n" +
		"X-Served: 1\r\nStrict-Transport-Security: max-age=60\r\n\r\n"
	if got != want {
		t.Errorf("client got\n%q\nwant\n%q", got, want)
	}
}
