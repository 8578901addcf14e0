package functionaltests

import (
	"bufio"
	"fmt"
	"io"
	"net"
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
	for attempt := 1; ; attempt++ {
		g, exited := launchInteropServer(t, cert, key)
		if serving(t, g.addr, exited) {
			return g
		}
		// On a machine running other tests, the port freePort found
		// can be taken before the server binds it (on every address):
		// try another.
		if attempt < 5 && strings.Contains(g.out.String(), "address already in use") {
			continue
		}
		t.Fatalf("grpc-interop-server does not serve on %s: %s", g.addr, g.out.String())
	}
}

// launchInteropServer starts grpc-interop-server on a free port;
// exited is closed when it ends.
func launchInteropServer(t *testing.T, cert, key string) (g *grpcPeer, exited chan struct{}) {
	t.Helper()
	port := freeWildcardPort(t)
	g = &grpcPeer{out: &syncBuffer{}, addr: fmt.Sprintf("127.0.0.1:%d", port), port: port}
	args := []string{"-port", fmt.Sprint(port)}
	if cert != "" {
		args = append(args, "-use_tls", "-tls_cert_file", cert, "-tls_key_file", key)
	}
	g.cmd = exec.Command(needTool(t, "grpc-interop-server"), args...)
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan struct{})
	go func() { g.cmd.Wait(); close(exited) }() // its exit status is the output's business
	t.Cleanup(func() { g.cmd.Process.Kill(); <-exited })
	return g, exited
}

// freeWildcardPort is a port free on every address, as the interop
// server binds it (freePort's is only free on 127.0.0.1).
func freeWildcardPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// serving waits until the server started on addr accepts connections;
// false if it exits first (a connection accepted then was another
// program's).
func serving(t *testing.T, addr string, exited <-chan struct{}) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			select {
			case <-exited:
				return false
			default:
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
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
