package functionaltests

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// gRPC peers for the HTTP/2 backend tests: grpc-go's interop server and
// client, and grpcpeer (tools/grpc-interop/grpcpeer), built by make
// functional into bin/tools from the pinned tools module.

// grpcPeer is a running gRPC server (grpcpeer serve or the interop
// server) on 127.0.0.1.
type grpcPeer struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	addr string
	port int
}

// startGRPCPeer starts grpcpeer serve on a free port and waits for it.
func startGRPCPeer(t *testing.T, args ...string) *grpcPeer {
	t.Helper()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	g := &grpcPeer{out: &syncBuffer{}, addr: addr, port: port}
	g.cmd = exec.Command(needTool(t, "grpcpeer"), append([]string{"serve", "-addr", addr}, args...)...)
	stdout, err := g.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	g.cmd.Stderr = g.out
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.cmd.Process.Kill(); g.cmd.Wait() })
	br := bufio.NewReader(stdout)
	line, err := br.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("grpcpeer serve: %q %v\n%s", line, err, g.out.String())
	}
	go io.Copy(g.out, br)
	return g
}

// startInteropServer starts grpc-go's interop server, with TLS when
// cert and key are given, and waits until it accepts.
func startInteropServer(t *testing.T, cert, key string) *grpcPeer {
	t.Helper()
	port := freePort(t)
	g := &grpcPeer{out: &syncBuffer{}, addr: fmt.Sprintf("127.0.0.1:%d", port), port: port}
	args := []string{"-port", fmt.Sprint(port)}
	if cert != "" {
		args = append(args, "-use_tls", "-tls_cert_file", cert, "-tls_key_file", key)
	}
	g.cmd = exec.Command(needTool(t, "grpc-interop-server"), args...)
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.cmd.Process.Kill(); g.cmd.Wait() })
	waitListening(t, g.addr)
	return g
}

// waitListening waits until addr accepts connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if out, code := runTool(t, "grpcpeer", "unary", "-addr", addr, "-n", "0"); code == 0 && strings.HasPrefix(out, "calls") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing serves gRPC on %s", addr)
}

// waitOutput waits until the peer printed a line containing want.
func (g *grpcPeer) waitOutput(t *testing.T, want string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); !strings.Contains(g.out.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q from the gRPC peer:\n%s", want, g.out.String())
		}
	}
}

// h2Backend renders a BackEnd block with Protocol h2 and extra lines.
func h2Backend(port int, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\t\tBackEnd\n\t\t\tAddress 127.0.0.1\n\t\t\tPort %d\n\t\t\tProtocol h2\n", port)
	for _, l := range extra {
		b.WriteString("\t\t\t" + l + "\n")
	}
	b.WriteString("\t\tEnd\n")
	return b.String()
}

// grpcConfig renders an lbd configuration: a TLS listener (with the
// certificate tlsCert) or, when tlsCert is "", a ListenHTTP accepting
// h2c, with one service over backends.
func grpcConfig(tlsCert, globals string, backends ...string) string {
	var b strings.Builder
	b.WriteString("Daemon 0\nLogLevel 0\nAlive 1\nTimeOut 5\nClient 10\nGrace 1\n" + globals)
	if tlsCert != "" {
		fmt.Fprintf(&b, "ListenHTTPS\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tCert %q\n", tlsCert)
	} else {
		b.WriteString("ListenHTTP\n\tAddress 127.0.0.1\n\tPort {PORT}\n\tHTTP2 1\n")
	}
	b.WriteString("\tService\n")
	for _, be := range backends {
		b.WriteString(be)
	}
	b.WriteString("\tEnd\nEnd\n")
	return b.String()
}

// grpcClientArgs are the TLS flags of grpcpeer's clients for lbd's
// TLS listener with the test PKI's a.test certificate.
func (p *tlsPKI) grpcClientArgs() []string {
	return []string{"-tls", "-ca", p.caFile, "-name", "a.test"}
}
