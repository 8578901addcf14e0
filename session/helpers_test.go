package session

import (
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"

	"lbd/http1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newRequest builds a request the way http1 would: target, path and query
// slices of one buffer, and headers given as "Name: value" lines.
func newRequest(target string, headers ...string) *http1.Request {
	req := &http1.Request{Target: []byte(target)}
	path, query, hasQuery := strings.Cut(target, "?")
	req.Path = req.Target[:len(path)]
	if hasQuery {
		req.Query = req.Target[len(path)+1 : len(path)+1+len(query)]
	}
	req.Headers = parseHeaders(headers)
	return req
}

func parseHeaders(lines []string) []http1.Header {
	hs := make([]http1.Header, 0, len(lines))
	for _, l := range lines {
		name, value, _ := strings.Cut(l, ":")
		hs = append(hs, http1.Header{
			Name:  []byte(name),
			Value: []byte(strings.Trim(value, " \t")),
		})
	}
	return hs
}

// within reports whether sub lies inside the memory of buf, i.e. is an
// alias, not a copy.
func within(sub, buf []byte) bool {
	if len(sub) == 0 || cap(buf) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf[:1])))
	hi := lo + uintptr(cap(buf))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	return p >= lo && p+uintptr(len(sub)) <= hi
}

// withinRequest reports whether key aliases some field of req.
func withinRequest(key []byte, req *http1.Request) bool {
	if within(key, req.Target) {
		return true
	}
	for _, h := range req.Headers {
		if within(key, h.Value) {
			return true
		}
	}
	return false
}

// fakeClock is an injectable clock, safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
