// Command backend is the demo backend of `make run` (scripts/run-demo.sh;
// the functional tests start their own in-process): an HTTP/1.1 server on 127.0.0.x that echoes what it
// received (method, URI, every header, body length and checksum) and
// names itself, so a reader can see which backend answered and what the
// proxy changed on the wire.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:8081", "address to listen on")
	name := flag.String("name", "backend", "name reported in responses")
	flag.Parse()
	srv := &http.Server{Addr: *addr, Handler: echo(*name)}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

func echo(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			// A cut body must not be reported as whole.
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Backend", name)
		var b strings.Builder
		fmt.Fprintf(&b, "backend: %s\n%s %s %s\n", name, r.Method, r.RequestURI, r.Proto)
		fmt.Fprintf(&b, "Host: %s\n", r.Host)
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, v := range r.Header[k] {
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
		}
		fmt.Fprintf(&b, "body-bytes: %d\nbody-sha256: %s\n", n, hex.EncodeToString(h.Sum(nil)))
		_, _ = io.WriteString(w, b.String()) // a client that left has nobody to tell
	})
}
