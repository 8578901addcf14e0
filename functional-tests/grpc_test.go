package functionaltests

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// interopCases are the test cases of grpc-go's interop client that need
// no cloud credentials, no xDS and no second server: the list grpc-go's
// own interop/interop_test.sh runs.
var interopCases = []string{
	"empty_unary", "large_unary", "client_streaming", "server_streaming",
	"ping_pong", "empty_stream", "timeout_on_sleeping_server",
	"cancel_after_begin", "cancel_after_first_response",
	"status_code_and_message", "special_status_message", "custom_metadata",
	"unimplemented_method", "unimplemented_service",
	"orca_per_rpc", "orca_oob", "rpc_soak", "channel_soak",
}

// TestGRPCInterop runs grpc-go's interoperability client against its
// interop server directly and through lbd in the three set-ups: h2c to
// lbd and h2c to the backend, TLS to lbd and h2c to the backend, TLS
// both ways. Every case must pass in each.
func TestGRPCInterop(t *testing.T) {
	p := newTLSPKI(t)
	key := p.write(t, "a.key", p.a.KeyPEM())
	crt := p.write(t, "a.crt", p.a.CertPEM())
	plain := startInteropServer(t, "", "")
	secure := startInteropServer(t, crt, key)
	tlsClient := []string{"-use_tls", "-use_test_ca", "-ca_file", p.caFile, "-server_host_override", "a.test"}
	setups := []struct {
		name    string
		cfg     string // "" = call the plain server directly
		client  []string
		backend *grpcPeer
	}{
		{"direct", "", nil, plain},
		{"h2c-lbd-h2c", grpcConfig("", "", h2Backend(plain.port)), nil, nil},
		{"tls-lbd-h2c", grpcConfig(p.path("a.pem"), "", h2Backend(plain.port)), tlsClient, nil},
		{"tls-lbd-tls", grpcConfig(p.path("a.pem"), "", h2Backend(secure.port, "HTTPS")), tlsClient, nil},
	}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			port := strconv.Itoa(plain.port)
			if s.cfg != "" {
				lbd := startLBD(t, s.cfg)
				_, port, _ = strings.Cut(lbd.addr, ":")
			}
			var failed []string
			for _, tc := range interopCases {
				args := append([]string{"-server_port", port, "-test_case", tc,
					`-service_config_json={"loadBalancingConfig":[{"test_backend_metrics_load_balancer":{}}]}`}, s.client...)
				if out, code := runTool(t, "grpc-interop-client", args...); code != 0 {
					failed = append(failed, tc)
					t.Logf("%s: exit %d\n%s", tc, code, lastLines(out, 3))
				}
			}
			t.Logf("%s: %d/%d interop cases pass", s.name, len(interopCases)-len(failed), len(interopCases))
			if len(failed) > 0 {
				t.Errorf("failed: %s", strings.Join(failed, " "))
			}
		})
	}
}

// TestGRPCBidiStreams: 100 concurrent bidirectional streams of 1,000
// messages of 1 KiB each way, through lbd (TLS) to two backends: every
// message arrives, and the streams are balanced over both backends.
func TestGRPCBidiStreams(t *testing.T) {
	p := newTLSPKI(t)
	a, b := startGRPCPeer(t, "-calls"), startGRPCPeer(t, "-calls")
	lbd := startLBD(t, grpcConfig(p.path("a.pem"), "", h2Backend(a.port), h2Backend(b.port)))
	out, code := runTool(t, "grpcpeer", append([]string{"bidi", "-addr", lbd.addr, "-streams", "100", "-messages", "1000", "-size", "1024"}, p.grpcClientArgs()...)...)
	if code != 0 || !strings.Contains(out, "streams=100 sent=100000 received=100000 errors=0") {
		t.Fatalf("bidi through lbd: exit %d\n%s", code, out)
	}
	na := strings.Count(a.out.String(), "call /grpc.testing.TestService/FullDuplexCall")
	nb := strings.Count(b.out.String(), "call /grpc.testing.TestService/FullDuplexCall")
	if na+nb != 100 || na == 0 || nb == 0 {
		t.Errorf("streams per backend %d and %d, want 100 over both", na, nb)
	}
}

// TestGRPCCancelReachesBackend: a client that cancels a call has its
// backend stream reset, which the backend sees within 100 ms, over h2c
// and TLS alike.
func TestGRPCCancelReachesBackend(t *testing.T) {
	p := newTLSPKI(t)
	for _, viaTLS := range []bool{false, true} {
		g := startGRPCPeer(t)
		cert, args := "", []string(nil)
		if viaTLS {
			cert, args = p.path("a.pem"), p.grpcClientArgs()
		}
		lbd := startLBD(t, grpcConfig(cert, "", h2Backend(g.port)))
		out, code := runTool(t, "grpcpeer", append([]string{"cancel", "-addr", lbd.addr}, args...)...)
		m := regexp.MustCompile(`cancelled-at (\d+)`).FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("cancel (TLS %v): exit %d\n%s", viaTLS, code, out)
		}
		g.waitOutput(t, "cancelled ", 2*time.Second)
		seen := regexp.MustCompile(`cancelled (\d+)`).FindStringSubmatch(g.out.String())
		at, _ := strconv.ParseInt(m[1], 10, 64)         // matched \d+
		reached, _ := strconv.ParseInt(seen[1], 10, 64) // matched \d+
		if d := time.Duration(reached - at); d < 0 || d > 100*time.Millisecond {
			t.Errorf("TLS %v: the backend saw the cancel %v after the client, want within 100ms", viaTLS, d)
		}
	}
}

// TestGRPCHealthCheck: a backend whose health service answers
// NOT_SERVING is taken out within two probe intervals (Alive 1) and
// its calls get UNAVAILABLE from lbd as a gRPC status; it comes back
// when it serves again.
func TestGRPCHealthCheck(t *testing.T) {
	g := startGRPCPeer(t)
	lbd := startLBD(t, grpcConfig("", "", h2Backend(g.port, `GrpcHealthCheck "grpc.testing.TestService"`)))
	if out, code := runTool(t, "grpcpeer", "unary", "-addr", lbd.addr); code != 0 {
		t.Fatalf("healthy backend: exit %d\n%s", code, out)
	}
	g.cmd.Process.Signal(syscall.SIGUSR1)
	g.waitOutput(t, "health NOT_SERVING", 2*time.Second)
	start := time.Now()
	waitLog(t, lbd, "dead (probe: health check: NOT_SERVING)", 3*time.Second)
	if d := time.Since(start); d > 2*time.Second+500*time.Millisecond {
		t.Errorf("taken out after %v, want within two probe intervals (2s)", d)
	}
	out, code := runTool(t, "grpcpeer", "unary", "-addr", lbd.addr)
	if code == 0 || !strings.Contains(out, "code = Unavailable desc = lbd: 503 Service Unavailable") {
		t.Errorf("call to the dead backend: exit %d %q, want UNAVAILABLE from lbd", code, out)
	}
	g.cmd.Process.Signal(syscall.SIGUSR2)
	waitLog(t, lbd, "resurrected", 3*time.Second)
	if out, code := runTool(t, "grpcpeer", "unary", "-addr", lbd.addr); code != 0 {
		t.Errorf("backend serving again: exit %d\n%s", code, out)
	}
}

// TestGRPCGoAwayDrains: a backend that sends GOAWAY on every connection
// after 200 ms (grpc-go's MaxConnectionAge) while calls keep coming:
// lbd opens new connections and not one call fails.
func TestGRPCGoAwayDrains(t *testing.T) {
	g := startGRPCPeer(t, "-max-conn-age", "200ms")
	lbd := startLBD(t, grpcConfig("", "", h2Backend(g.port)))
	for i := 0; i < 4; i++ {
		out, code := runTool(t, "grpcpeer", "unary", "-addr", lbd.addr, "-n", "500")
		if code != 0 || !strings.Contains(out, "calls 500") {
			t.Fatalf("round %d: exit %d\n%s", i, code, out)
		}
	}
}

// TestGRPCLargeMessages: messages of 4 MiB and more each way, on
// concurrent bidirectional streams through lbd (TLS to lbd, h2c to the
// backend), arrive whole.
func TestGRPCLargeMessages(t *testing.T) {
	p := newTLSPKI(t)
	g := startGRPCPeer(t)
	lbd := startLBD(t, grpcConfig(p.path("a.pem"), "", h2Backend(g.port)))
	args := append([]string{"bidi", "-addr", lbd.addr, "-streams", "2", "-messages", "3", "-size", "4200000"}, p.grpcClientArgs()...)
	if out, code := runTool(t, "grpcpeer", args...); code != 0 || !strings.Contains(out, "streams=2 sent=6 received=6 errors=0") {
		t.Fatalf("4 MiB messages through lbd: exit %d\n%s", code, out)
	}
}

// TestGRPCSessionOnMetadata: a Session on a request header keeps the
// calls that carry the same metadata on one backend, per call, while
// calls share the client's one connection.
func TestGRPCSessionOnMetadata(t *testing.T) {
	name := func(n string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, n) })
	}
	a, b := h2cBackend(t, name("a")), h2cBackend(t, name("b"))
	session := "\t\tSession\n\t\t\tType HEADER\n\t\t\tID \"x-user\"\n\t\t\tTTL 60\n\t\tEnd\n"
	lbd := startLBD(t, grpcConfig("", "", h2Backend(a), h2Backend(b), session))
	client := h2cClient()
	seen := map[string]map[string]bool{}
	for i := 0; i < 40; i++ {
		user := fmt.Sprintf("user%d", i%4)
		req, _ := http.NewRequest("POST", "http://"+lbd.addr+"/svc/Call", strings.NewReader("x")) // a constant, valid URL
		req.Header.Set("X-User", user)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body) // an empty body fails below
		resp.Body.Close()
		if seen[user] == nil {
			seen[user] = map[string]bool{}
		}
		seen[user][string(body)] = true
	}
	both := map[string]bool{}
	for user, backends := range seen {
		if len(backends) != 1 {
			t.Errorf("%s went to %v, want one backend", user, backends)
		}
		for be := range backends {
			both[be] = true
		}
	}
	if !both["a"] || !both["b"] {
		t.Logf("sessions all landed on %v (random balancing may do that)", both)
	}
}

// TestGRPCLongLivedStream: a stream that goes on sending for longer than
// the listener's Client timeout (1 s here) lives on: data moving either
// way keeps it, only the backend's TimeOut of silence would end it.
func TestGRPCLongLivedStream(t *testing.T) {
	g := startGRPCPeer(t)
	lbd := startLBD(t, strings.Replace(grpcConfig("", "", h2Backend(g.port)), "Client 10", "Client 1", 1))
	out, code := runTool(t, "grpcpeer", "bidi", "-addr", lbd.addr, "-streams", "3", "-messages", "25", "-size", "100", "-pace", "100ms")
	if code != 0 || !strings.Contains(out, "streams=3 sent=75 received=75 errors=0") {
		t.Fatalf("2.5 s streams with Client 1: exit %d\n%s", code, out)
	}
}
