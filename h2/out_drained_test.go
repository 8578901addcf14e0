package h2

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestOutQueueDrained: a connection may park only once what it queued is
// written: not while frames wait in the queue, nor while the writer has
// taken them and its write is blocked (a client that does not read).
func TestOutQueueDrained(t *testing.T) {
	srv, cl := net.Pipe() // a write blocks until the other end reads it
	defer cl.Close()
	q := newOutQueue(srv, srv, 0)
	defer q.close() // ends the writer and closes srv
	if !q.drained() {
		t.Fatal("a new queue is not drained")
	}
	b, err := q.begin(false)
	if err != nil {
		t.Fatal(err)
	}
	q.end(append(b, "frames"...))
	// The writer takes the buffer and blocks in its write: the queue is
	// empty, but nothing has gone out.
	for i := 0; ; i++ {
		q.mu.Lock()
		taken := len(q.buf) == 0
		q.mu.Unlock()
		if taken {
			break
		}
		if i == 1000 {
			t.Fatal("the writer did not take the queue")
		}
		time.Sleep(time.Millisecond)
	}
	if q.drained() {
		t.Fatal("drained while the write is still blocked")
	}
	got := make([]byte, len("frames"))
	if _, err := io.ReadFull(cl, got); err != nil {
		t.Fatal(err)
	}
	for i := 0; !q.drained(); i++ {
		if i == 1000 {
			t.Fatal("not drained after the client read everything")
		}
		time.Sleep(time.Millisecond)
	}
}
