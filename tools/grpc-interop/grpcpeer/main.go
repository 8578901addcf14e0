// Command grpcpeer is the gRPC peer of lbd's functional tests, built on
// grpc-go like the interop programs beside it: a server (grpc-go's
// interop TestService and health service, which reports its stream
// cancellations and can be told to stop serving) and the clients the
// interop suite lacks (many concurrent bidirectional streams, a
// cancellation at a known time).
//
//	grpcpeer serve -addr HOST:PORT [-cert F -key F] [-max-conn-age D] [-calls]
//	grpcpeer bidi -addr HOST:PORT [-tls -ca F -name N] [-streams 100 -messages 1000 -size 1024 -pace 0]
//	grpcpeer cancel -addr HOST:PORT [-tls -ca F -name N]
//	grpcpeer unary -addr HOST:PORT [-n 1]
//	grpcpeer load -addr HOST:PORT -n CALLS -c CONCURRENCY [-stream]
//
// serve prints "ready", then "cancelled UNIXNANO" whenever a call ends
// by cancellation while its handler runs; SIGUSR1 sets the health
// status to NOT_SERVING, SIGUSR2 back to SERVING (printing "health
// STATUS"). Every client prints one result line and exits 0 only when
// every call succeeded.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grpcpeer serve|bidi|cancel|unary [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:50051", "address to listen on or call")
	cert := fs.String("cert", "", "serve: TLS certificate file")
	key := fs.String("key", "", "serve: TLS key file")
	useTLS := fs.Bool("tls", false, "client: call over TLS")
	ca := fs.String("ca", "", "client: CA file to verify the server with")
	name := fs.String("name", "", "client: server name to verify")
	streams := fs.Int("streams", 100, "bidi: concurrent streams")
	messages := fs.Int("messages", 1000, "bidi: messages each way per stream")
	size := fs.Int("size", 1024, "bidi: message payload bytes")
	pace := fs.Duration("pace", 0, "bidi: pause between a stream's messages (a long-lived stream)")
	n := fs.Int("n", 1, "unary, load: calls (load: messages when -stream)")
	conc := fs.Int("c", 1, "load: concurrent callers (streams)")
	stream := fs.Bool("stream", false, "load: ping-pong messages on long-lived streams instead of unary calls")
	maxAge := fs.Duration("max-conn-age", 0, "serve: send GOAWAY on connections this old (0: never)")
	calls := fs.Bool("calls", false, "serve: print \"call METHOD\" for every call")
	_ = fs.Parse(os.Args[2:]) // ExitOnError: Parse exits on a bad flag
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(*addr, *cert, *key, *maxAge, *calls)
	case "bidi", "cancel", "unary", "load":
		var cc *grpc.ClientConn
		if cc, err = dial(*addr, *useTLS, *ca, *name); err == nil {
			defer cc.Close()
			c := testgrpc.NewTestServiceClient(cc)
			switch os.Args[1] {
			case "bidi":
				err = bidi(c, *streams, *messages, *size, *pace)
			case "cancel":
				err = cancelCall(c)
			case "load":
				err = load(c, *n, *conc, *stream)
			default:
				err = unary(c, *n)
			}
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func serve(addr, cert, key string, maxAge time.Duration, calls bool) error {
	var opts []grpc.ServerOption
	if maxAge > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: maxAge, MaxConnectionAgeGrace: time.Minute}))
	}
	printCalls = calls
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return err
		}
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(&pair)))
	}
	opts = append(opts, grpc.StreamInterceptor(reportCancel), grpc.UnaryInterceptor(reportCancelUnary),
		grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20)) // large-message tests
	srv := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(srv, interop.NewTestServer())
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for s := range sigs {
			st := healthpb.HealthCheckResponse_SERVING
			if s == syscall.SIGUSR1 {
				st = healthpb.HealthCheckResponse_NOT_SERVING
			}
			hs.SetServingStatus("", st)
			hs.SetServingStatus("grpc.testing.TestService", st)
			fmt.Println("health", st)
		}
	}()
	hs.SetServingStatus("grpc.testing.TestService", healthpb.HealthCheckResponse_SERVING)
	fmt.Println("ready")
	return srv.Serve(ln)
}

var (
	outMu      sync.Mutex
	printCalls bool
)

// reportCancelled prints when ctx was cancelled if the call failed
// by a cancellation: the time the client's cancel reached this server.
func reportCancelled(ctx context.Context, run func() error) error {
	if printCalls {
		if m, ok := grpc.Method(ctx); ok {
			outMu.Lock()
			fmt.Println("call", m)
			outMu.Unlock()
		}
	}
	at := make(chan int64, 1)
	stop := context.AfterFunc(ctx, func() { at <- time.Now().UnixNano() })
	defer stop()
	err := run()
	if err == nil || !errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	select {
	case t := <-at:
		outMu.Lock()
		fmt.Println("cancelled", t)
		outMu.Unlock()
	case <-time.After(time.Second):
	}
	return err
}

func reportCancel(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return reportCancelled(ss.Context(), func() error { return h(srv, ss) })
}

func reportCancelUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	var resp any
	err := reportCancelled(ctx, func() error {
		var err error
		resp, err = h(ctx, req)
		return err
	})
	return resp, err
}

func dial(addr string, useTLS bool, ca, name string) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if useTLS {
		cfg := &tls.Config{ServerName: name}
		if ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, err
			}
			cfg.RootCAs = x509.NewCertPool()
			cfg.RootCAs.AppendCertsFromPEM(pem)
		}
		creds = credentials.NewTLS(cfg)
	}
	return grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
}

// bidi runs streams full-duplex calls at once, each sending messages
// requests of size bytes that each ask for one response of size bytes,
// and checks that every response came, in full.
func bidi(c testgrpc.TestServiceClient, streams, messages, size int, pace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var sent, received atomic.Int64
	errs := make(chan error, streams)
	payload := &testpb.Payload{Body: make([]byte, size)}
	params := []*testpb.ResponseParameters{{Size: int32(size)}}
	for range streams {
		go func() {
			st, err := c.FullDuplexCall(ctx)
			if err != nil {
				errs <- err
				return
			}
			go func() {
				for range messages {
					if err := st.Send(&testpb.StreamingOutputCallRequest{ResponseParameters: params, Payload: payload}); err != nil {
						return // Recv reports why
					}
					sent.Add(1)
					time.Sleep(pace)
				}
				_ = st.CloseSend() // never fails for a client stream
			}()
			for i := 0; ; i++ {
				r, err := st.Recv()
				if err == io.EOF {
					if i != messages {
						errs <- fmt.Errorf("stream ended after %d of %d responses", i, messages)
						return
					}
					errs <- nil
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if len(r.GetPayload().GetBody()) != size {
					errs <- fmt.Errorf("response of %d bytes, want %d", len(r.GetPayload().GetBody()), size)
					return
				}
				received.Add(1)
			}
		}()
	}
	failed := 0
	var first error
	for range streams {
		if err := <-errs; err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	fmt.Printf("streams=%d sent=%d received=%d errors=%d\n", streams, sent.Load(), received.Load(), failed)
	if first != nil {
		return first
	}
	if want := int64(streams * messages); sent.Load() != want || received.Load() != want {
		return fmt.Errorf("messages sent %d, received %d, want %d each", sent.Load(), received.Load(), want)
	}
	return nil
}

// cancelCall starts a full-duplex call, exchanges one message, then
// cancels it and prints when.
func cancelCall(c testgrpc.TestServiceClient) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := c.FullDuplexCall(ctx)
	if err != nil {
		return err
	}
	req := &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 10}}}
	if err := st.Send(req); err != nil {
		return err
	}
	if _, err := st.Recv(); err != nil {
		return err
	}
	time.Sleep(50 * time.Millisecond) // the call is established end to end
	at := time.Now().UnixNano()
	cancel()
	if _, err := st.Recv(); status.Code(err) != codes.Canceled {
		return fmt.Errorf("after cancel: %v, want Canceled", err)
	}
	fmt.Println("cancelled-at", at)
	return nil
}

// unary makes n UnaryCalls of 100 bytes each way.
func unary(c testgrpc.TestServiceClient, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &testpb.SimpleRequest{ResponseSize: 100, Payload: &testpb.Payload{Body: make([]byte, 100)}}
	for i := range n {
		r, err := c.UnaryCall(ctx, req)
		if err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
		if len(r.GetPayload().GetBody()) != 100 {
			return fmt.Errorf("call %d: %d bytes", i, len(r.GetPayload().GetBody()))
		}
	}
	fmt.Println("calls", n)
	return nil
}

// load makes n calls of 100 bytes each way from c callers at once:
// unary calls, or with stream messages ping-ponged on c long-lived
// full-duplex streams. It prints the calls and the time taken.
func load(tc testgrpc.TestServiceClient, n, c int, stream bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var next atomic.Int64
	errs := make(chan error, c)
	start := time.Now()
	unaryReq := &testpb.SimpleRequest{ResponseSize: 100, Payload: &testpb.Payload{Body: make([]byte, 100)}}
	streamReq := &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 100}},
		Payload: &testpb.Payload{Body: make([]byte, 100)}}
	for range c {
		go func() {
			var st testgrpc.TestService_FullDuplexCallClient
			if stream {
				var err error
				if st, err = tc.FullDuplexCall(ctx); err != nil {
					errs <- err
					return
				}
				defer st.CloseSend()
			}
			for next.Add(1) <= int64(n) {
				var err error
				if stream {
					if err = st.Send(streamReq); err == nil {
						_, err = st.Recv()
					}
				} else {
					_, err = tc.UnaryCall(ctx, unaryReq)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range c {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	d := time.Since(start)
	fmt.Printf("calls=%d seconds=%.3f calls/s=%.0f\n", n, d.Seconds(), float64(n)/d.Seconds())
	return first
}
