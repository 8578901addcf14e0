package proxy

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"lbd/cache"
)

// A cache hit is served from the stored object as it is: no allocation
// and no copy of the stored body per hit, whatever its size.

// cacheableResponse is benchResponse with a body of n bytes, fresh for an
// hour.
func cacheableResponse(n int) string {
	return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nCache-Control: max-age=3600\r\n" +
		"Content-Length: " + strconv.Itoa(n) + "\r\n\r\n" + strings.Repeat("b", n)
}

// newCachingMemProxy is newMemProxy with a cache on its service, filled
// by one request.
func newCachingMemProxy(t testing.TB, bodySize int) (*conn, *Listener, *memConn, *memConn) {
	be := &memConn{reply: []byte(cacheableResponse(bodySize))}
	c, st, client := newMemProxy(t, be)
	svc := st.Router.Services[0]
	cc, err := cache.New(cache.Config{Budget: 64 << 20, MaxObject: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Close)
	svc.Cache = cc
	client.in = []byte(benchRequest)
	client.keep = true
	if !cycle(c, st, client) {
		t.Fatalf("filling cycle failed; client got %.200q", client.out)
	}
	return c, st, client, be
}

func TestCacheHitDoesNotAllocate(t *testing.T) {
	for _, size := range []int{1 << 10, 1 << 20} {
		t.Run(strconv.Itoa(size)+" bytes", func(t *testing.T) {
			c, st, client, be := newCachingMemProxy(t, size)
			client.out = client.out[:0]
			if !cycle(c, st, client) {
				t.Fatal("hit cycle failed")
			}
			if got := string(client.out); !strings.Contains(got, "\r\nCache-Status: lbd; hit") ||
				!strings.HasSuffix(got, strings.Repeat("b", size)) {
				t.Fatalf("not a whole hit: %.300q", got)
			}
			client.keep = false
			backendWrites := be.wrote
			allocs := testing.AllocsPerRun(200, func() {
				if !cycle(c, st, client) {
					t.Fatal("cycle failed")
				}
			})
			if be.wrote != backendWrites {
				t.Fatal("hits reached the backend")
			}
			if allocs != 0 && !raceEnabled {
				t.Fatalf("a %d-byte hit allocates %.1f times, want 0", size, allocs)
			}
			if n := st.Router.Services[0].Cache.Stats.Hits.Load(); n != 202 {
				t.Fatalf("%d hits counted, want 202", n)
			}
		})
	}
}

// bodyConn records where the largest piece written starts.
type bodyConn struct {
	memConn
	largest []byte
}

func (b *bodyConn) Write(p []byte) (int, error) {
	if len(p) > len(b.largest) {
		b.largest = p
	}
	return b.memConn.Write(p)
}

func TestCacheHitWritesTheStoredBody(t *testing.T) {
	const size = 1 << 20
	c, st, client, _ := newCachingMemProxy(t, size)
	bc := &bodyConn{memConn: memConn{in: client.in}}
	c.nc = bc
	if !cycle(c, st, &bc.memConn) {
		t.Fatal("hit cycle failed")
	}
	tx := st.Router.Services[0].Cache.Begin(&c.req)
	defer tx.Finish(false)
	if tx.Action != cache.Hit {
		t.Fatalf("action %d, want a hit", tx.Action)
	}
	stored := tx.Body()
	if len(bc.largest) != size || unsafe.SliceData(bc.largest) != unsafe.SliceData(stored) {
		t.Fatalf("the body was not written from the stored bytes (largest write %d bytes)", len(bc.largest))
	}
}

// Over TCP the head and a large body go out in one writev, without an
// allocation (net.Buffers through the socket's writev).
func TestStoredBodyWritevDoesNotAllocate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	const runs, head, size = 20, 40, 1 << 20
	got := make(chan int64, 1)
	go func() {
		buf := make([]byte, 64<<10)
		var n int64
		for n < (runs+1)*(head+size) {
			k, err := client.Read(buf)
			if err != nil {
				break
			}
			n += int64(k)
		}
		got <- n
	}()
	c := &conn{nc: server}
	body := []byte(strings.Repeat("b", size))
	headBytes := []byte(strings.Repeat("h", head))
	allocs := testing.AllocsPerRun(runs, func() {
		c.out = append(c.out[:0], headBytes...)
		if err := c.writeStored(body); err != nil {
			t.Fatal(err)
		}
	})
	if n := <-got; n != (runs+1)*(head+size) {
		t.Fatalf("client read %d bytes, want %d", n, (runs+1)*(head+size))
	}
	if allocs != 0 && !raceEnabled {
		t.Fatalf("writing a stored body allocates %.1f times, want 0", allocs)
	}
}
