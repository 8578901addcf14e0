package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"lbd/backend"
	"lbd/balancer"
	"lbd/config"
	"lbd/http1"
	"lbd/service"
)

// serveOneBackend serves, on a loopback port, a Pound-dialect listener
// whose one service balances to the backend at beAddr; client is the
// listener's client timeout, timeout the backend's. The caller stops
// srv, then closes algo and b's idle conns.
func serveOneBackend(t *testing.T, beAddr string, client, timeout time.Duration) (*Server, net.Listener, *backend.Backend, *balancer.Balancer) {
	t.Helper()
	b := backend.New(backend.Options{Address: beAddr, Priority: 5, TimeOut: timeout})
	algo := balancer.New(balancer.Random, []*backend.Backend{b})
	svc, err := service.New(&config.Service{}, service.Options{Backends: []*backend.Backend{b}, Algo: algo})
	if err != nil {
		t.Fatal(err)
	}
	st := &Listener{
		Dialect: config.DialectPound, Limits: http1.DefaultLimits, Client: client,
		Errors: NewErrorPages(config.DialectPound, nil), Scheme: "http", Port: "80",
		Forwarded: true, MaxTries: 3, Edits: NewEdits(EditsConfig{LocationInPlace: true}),
		SvcEdits: map[*service.Service]*HeaderEdits{},
	}
	st.Router.Services = []*service.Service{svc}
	st.SvcEdits[svc] = NewEdits(EditsConfig{LocationInPlace: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return NewServer(st), ln, b, algo
}

// newLoopbackServer serves a listener state over real loopback sockets
// with one real HTTP backend.
func newLoopbackServer(t *testing.T) (*Server, net.Listener, func()) {
	t.Helper()
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})}
	go hs.Serve(bln)
	srv, ln, b, algo := serveOneBackend(t, bln.Addr().String(), 5*time.Second, 5*time.Second)
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	return srv, ln, func() {
		<-done
		algo.Close()
		b.CloseIdle()
		hs.Close()
	}
}

func TestServeAndShutdownLeaveNoGoroutines(t *testing.T) {
	// The idle-connection parker lives as long as the process.
	defer goleak.VerifyNone(t, goleak.IgnoreAnyFunction("lbd/proxy.(*parker).loop"),
		goleak.IgnoreAnyFunction("lbd/proxy.(*parker).sweep"))
	srv, ln, cleanup := newLoopbackServer(t)
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	for i := 0; i < 20; i++ {
		resp, err := client.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello" {
			t.Fatalf("body %q", body)
		}
	}
	// One keep-alive connection is still open and idle: Shutdown must
	// close it and return.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	tr.CloseIdleConnections()
	cleanup()
	if n := srv.Active.Load(); n != 0 {
		t.Fatalf("%d client connections still counted", n)
	}
}
