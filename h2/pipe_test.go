package h2

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// TestPipeCarriesEveryByte streams data larger than pipeCap both ways
// in random write and read sizes.
func TestPipeCarriesEveryByte(t *testing.T) {
	a, b := newPipe()
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(rand.IntN(256))
	}
	var wg sync.WaitGroup
	for _, dir := range [][2]*pipeEnd{{a, b}, {b, a}} {
		wg.Add(1)
		go func(w, r *pipeEnd) {
			defer wg.Done()
			go func() {
				for off := 0; off < len(data); {
					n := min(1+rand.IntN(100<<10), len(data)-off)
					if _, err := w.Write(data[off : off+n]); err != nil {
						t.Error(err)
						return
					}
					off += n
				}
			}()
			got := make([]byte, 0, len(data))
			buf := make([]byte, 70<<10)
			for len(got) < len(data) {
				n, err := r.Read(buf[:1+rand.IntN(len(buf)-1)])
				if err != nil {
					t.Error(err)
					return
				}
				got = append(got, buf[:n]...)
			}
			if !bytes.Equal(got, data) {
				t.Error("data corrupted")
			}
		}(dir[0], dir[1])
	}
	wg.Wait()
}

// TestPipeWriterWakesAfterDrain: a reader that drains a full buffer and
// at once waits for more must not take the writer's wake-up.
func TestPipeWriterWakesAfterDrain(t *testing.T) {
	a, b := newPipe()
	defer a.Close()
	const total = 40 * pipeCap
	go func() {
		chunk := make([]byte, pipeCap)
		for i := 0; i < total/pipeCap; i++ {
			a.Write(chunk)
		}
		a.Close()
	}()
	n, err := io.Copy(io.Discard, b)
	if err != nil || n != total {
		t.Fatalf("read %d bytes, %v; want %d", n, err, total)
	}
}

func TestPipeCloseAndDeadlines(t *testing.T) {
	tests := []struct {
		name string
		run  func(a, b *pipeEnd) error
		want error
	}{
		{"read after peer close gets buffered data then EOF", func(a, b *pipeEnd) error {
			a.Write([]byte("xy"))
			a.Close()
			got, err := io.ReadAll(b)
			if string(got) != "xy" {
				return errors.New("lost " + string(got))
			}
			return err
		}, nil},
		{"write after peer close fails", func(a, b *pipeEnd) error {
			b.Close()
			_, err := a.Write([]byte("x"))
			return err
		}, io.ErrClosedPipe},
		{"read deadline", func(a, b *pipeEnd) error {
			b.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			_, err := b.Read(make([]byte, 1))
			return err
		}, os.ErrDeadlineExceeded},
		{"write deadline when full", func(a, b *pipeEnd) error {
			a.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
			_, err := a.Write(make([]byte, pipeCap+1))
			return err
		}, os.ErrDeadlineExceeded},
		{"deadline cleared while waiting", func(a, b *pipeEnd) error {
			b.SetReadDeadline(time.Now().Add(time.Hour))
			go func() { b.SetReadDeadline(time.Time{}); a.Write([]byte("z")) }()
			_, err := b.Read(make([]byte, 1))
			return err
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newPipe()
			defer a.Close()
			defer b.Close()
			if err := tt.run(a, b); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestBatchConnKeepsOrder writes from several goroutines through a
// batchConn to a slow reader; every write arrives whole and in the order
// each writer made them.
func TestBatchConnKeepsOrder(t *testing.T) {
	client, server := net.Pipe()
	bc := newBatchConn(server)
	const writers, per = 4, 2000
	var wg sync.WaitGroup
	var mu sync.Mutex // the h2 server serialises its writes; so do these
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				mu.Lock()
				bc.Write([]byte{byte(w), byte(i >> 8), byte(i), '\n'})
				mu.Unlock()
			}
		}()
	}
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(client); done <- b }()
	wg.Wait()
	bc.Close()
	got := <-done
	if len(got) != writers*per*4 {
		t.Fatalf("got %d bytes, want %d", len(got), writers*per*4)
	}
	next := make([]int, writers)
	for i := 0; i < len(got); i += 4 {
		w, n := int(got[i]), int(got[i+1])<<8|int(got[i+2])
		if n != next[w] {
			t.Fatalf("writer %d: message %d after %d", w, n, next[w]-1)
		}
		next[w]++
	}
}
