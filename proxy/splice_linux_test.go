//go:build linux

package proxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

func TestSpliceCopyMovesBytesAndEndsWhenIdle(t *testing.T) {
	// writer -> [srcPeer | src] --splice--> [dst | dstPeer] -> reader
	srcPeer, src := tcpPair(t)
	dst, dstPeer := tcpPair(t)
	payload := bytes.Repeat([]byte("websocket frame "), 20000) // 320 KB, several chunks
	go srcPeer.Write(payload)
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(payload))
		io.ReadFull(dstPeer, b)
		got <- b
	}()
	done := make(chan bool, 1)
	k := &idleClock{idle: 200 * time.Millisecond}
	k.touch()
	go func() {
		handled, err := spliceCopy(dst, src, k)
		done <- handled && isTimeout(err)
	}()
	if b := <-got; !bytes.Equal(b, payload) {
		t.Fatalf("spliced %d bytes, not the payload", len(b))
	}
	select {
	case handled := <-done:
		if !handled {
			t.Fatal("plain TCP sockets were not spliced, or the copy did not end on the idle timeout")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("spliceCopy did not end after the idle timeout")
	}
}

func TestSpliceCopyDeclinesNonSockets(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if handled, _ := spliceCopy(a, b, &idleClock{idle: time.Second}); handled {
		t.Fatal("net.Pipe has no file descriptor: spliceCopy must decline")
	}
}
