package functionaltests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangLimit is how long a hanging backend holds a connection at most.
const hangLimit = 3 * time.Second

// faultMode is what a faultBackend does with the requests it reads.
type faultMode int32

const (
	modeOK      faultMode = iota // answer 200 "<name> <id>"
	modeHang                     // read the request, never answer
	modeGarbage                  // answer bytes that are no HTTP, then close
	modeMidBody                  // promise 1000 body bytes, send 400, close
)

func (m faultMode) String() string {
	return [...]string{"ok", "hang", "garbage", "midbody"}[m]
}

// arrival is one complete request a faultBackend read: the id it carried,
// what the backend was doing then and when.
type arrival struct {
	id     string
	method string
	mode   faultMode
	at     time.Time
}

// faultBackend is a raw-TCP HTTP/1.1 backend whose behaviour a test
// switches at run time. It listens on a fixed address so that it can be
// killed and restarted where lbd expects it, and records every request id
// so that the test can tell which backend saw (and so applied) what.
type faultBackend struct {
	name string
	addr string
	mode atomic.Int32
	// accepted counts connections, to tell keep-alive reuse from redials.
	accepted atomic.Int64

	mu       sync.Mutex
	ln       net.Listener // nil while down
	conns    map[net.Conn]struct{}
	gen      int // bumped by kill: connections accepted before it are void
	arrivals []arrival
	wg       sync.WaitGroup // accept loop and connection handlers
}

// newFaultBackend starts a backend in modeOK on a free port of host; it is
// stopped when the test ends.
func newFaultBackend(t *testing.T, host, name string) *faultBackend {
	t.Helper()
	b := &faultBackend{name: name, addr: host + ":0", conns: map[net.Conn]struct{}{}}
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.kill)
	return b
}

// block renders a BackEnd block for b.
func (b *faultBackend) block() string {
	host, port, _ := net.SplitHostPort(b.addr)
	return fmt.Sprintf("\t\tBackEnd\n\t\t\tAddress %s\n\t\t\tPort %s\n\t\tEnd\n", host, port)
}

// start listens (again) on b's address. Go sets SO_REUSEADDR, so a
// restart on the same port works despite TIME_WAIT connections.
func (b *faultBackend) start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", b.addr)
	if err != nil {
		return err
	}
	b.ln, b.addr = ln, ln.Addr().String()
	b.wg.Add(1)
	go b.accept(ln, b.gen)
	return nil
}

// refuse closes the listening socket only: new connects are refused while
// connections already open keep being served.
func (b *faultBackend) refuse() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ln != nil {
		b.ln.Close()
		b.ln = nil
	}
}

// kill is what a crash looks like from outside: the listener and every
// connection close at once. It waits for all handlers to return.
func (b *faultBackend) kill() {
	b.mu.Lock()
	if b.ln != nil {
		b.ln.Close()
		b.ln = nil
	}
	for c := range b.conns {
		c.Close()
	}
	b.gen++
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *faultBackend) setMode(m faultMode) { b.mode.Store(int32(m)) }

func (b *faultBackend) accept(ln net.Listener, gen int) {
	defer b.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.gen != gen { // accepted just before a kill closed ln
			b.mu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.accepted.Add(1)
		b.wg.Add(1)
		b.mu.Unlock()
		go b.serve(c)
	}
}

// serve handles one connection; keep-alive as long as the mode answers.
func (b *faultBackend) serve(c net.Conn) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.conns, c)
		b.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		id := req.Header.Get("X-Req-Id")
		m := faultMode(b.mode.Load())
		b.record(arrival{id: id, method: req.Method, mode: m, at: time.Now()})
		switch m {
		case modeOK:
			body := b.name + " " + id
			if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
				return
			}
		case modeHang:
			// Wait for lbd's TimeOut (or kill) to close the connection;
			// give up well after it, so that a descriptor lbd forgets to
			// close shows up as a leak rather than as our own open end.
			c.SetReadDeadline(time.Now().Add(hangLimit))
			io.Copy(io.Discard, br)
			return
		case modeGarbage:
			io.WriteString(c, "this is not HTTP at all\r\n\r\n")
			return
		case modeMidBody:
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+strings.Repeat("x", 400))
			return
		}
	}
}

func (b *faultBackend) record(a arrival) {
	b.mu.Lock()
	b.arrivals = append(b.arrivals, a)
	b.mu.Unlock()
}

// seen returns a copy of the arrivals so far.
func (b *faultBackend) seen() []arrival {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]arrival(nil), b.arrivals...)
}

// firstOKAfter returns when the first request answered normally arrived
// at or after t (zero time if none did).
func (b *faultBackend) firstOKAfter(t time.Time) time.Time {
	for _, a := range b.seen() {
		if a.mode == modeOK && !a.at.Before(t) {
			return a.at
		}
	}
	return time.Time{}
}

// openConns is the number of connections the backend still holds.
func (b *faultBackend) openConns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// loadResult is what one client saw for one request.
type loadResult struct {
	id, method string
	start, end time.Time
	reused     bool   // sent on a client connection that had served before
	status     int    // 0: no complete response (reset, EOF, truncated body)
	body       string // response body when status != 0
	err        error
}

func (r loadResult) String() string {
	s := fmt.Sprintf("%s %s [%s..%s] reused=%v status=%d", r.method, r.id,
		r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"), r.reused, r.status)
	if r.err != nil {
		s += " err=" + r.err.Error()
	}
	return s
}

// loadOpts bounds a load run in count and time.
type loadOpts struct {
	clients   int
	perClient int           // at most this many requests per client
	pace      time.Duration // pause between one client's requests
	dur       time.Duration // no request starts after this
	prefix    string        // makes ids unique across runs on one lbd
	// target returns the request target of request i of client n; nil
	// means "/f?id=<id>".
	target func(n, i int, id string) string
}

// runLoad runs o.clients concurrent keep-alive clients against addr, each
// sending a GET/POST mix whose requests carry a unique X-Req-Id. The
// clients speak raw HTTP/1.1 on purpose: net/http's Transport silently
// retries idempotent requests on a reused connection, which would hide the
// very failures these tests look for.
func runLoad(addr string, o loadOpts) []loadResult {
	var mu sync.Mutex
	var all []loadResult
	var wg sync.WaitGroup
	deadline := time.Now().Add(o.dur)
	for n := 0; n < o.clients; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := loadClient(addr, o, n, deadline)
			mu.Lock()
			all = append(all, rs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all
}

func loadClient(addr string, o loadOpts, n int, deadline time.Time) []loadResult {
	var rs []loadResult
	var c net.Conn
	var br *bufio.Reader
	served := 0 // requests answered on c
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for i := 0; i < o.perClient && time.Now().Before(deadline); i++ {
		if i > 0 {
			time.Sleep(o.pace)
		}
		r := loadResult{id: fmt.Sprintf("%sc%d-%d", o.prefix, n, i), method: "GET", start: time.Now()}
		if i%3 == 1 {
			r.method = "POST"
		}
		if c == nil {
			nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				r.end, r.err = time.Now(), err
				rs = append(rs, r)
				continue
			}
			c, br, served = nc, bufio.NewReader(nc), 0
		}
		r.reused = served > 0
		target := "/f?id=" + r.id
		if o.target != nil {
			target = o.target(n, i, r.id)
		}
		keep := exchangeOne(c, br, target, &r)
		r.end = time.Now()
		rs = append(rs, r)
		served++
		if !keep {
			c.Close()
			c = nil
		}
	}
	return rs
}

// exchangeOne sends one request on c and reads its response into r. It
// reports whether c may carry the next request.
func exchangeOne(c net.Conn, br *bufio.Reader, target string, r *loadResult) bool {
	var req string
	if r.method == "POST" {
		body := "payload-" + r.id
		req = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: lbd\r\nX-Req-Id: %s\r\nContent-Length: %d\r\n\r\n%s",
			target, r.id, len(body), body)
	} else {
		req = fmt.Sprintf("GET %s HTTP/1.1\r\nHost: lbd\r\nX-Req-Id: %s\r\n\r\n", target, r.id)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		r.err = err
		return false
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		r.err = err
		return false
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		r.err = fmt.Errorf("status %d, body: %w", resp.StatusCode, err)
		return false
	}
	r.status, r.body = resp.StatusCode, string(body)
	return !resp.Close
}
