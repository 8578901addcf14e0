//go:build linux

package proxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-ch
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

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
	go func() { done <- spliceCopy(dst, src, 200*time.Millisecond) }()
	if b := <-got; !bytes.Equal(b, payload) {
		t.Fatalf("spliced %d bytes, not the payload", len(b))
	}
	select {
	case handled := <-done:
		if !handled {
			t.Fatal("plain TCP sockets were not spliced")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("spliceCopy did not end after the idle timeout")
	}
}

func TestSpliceCopyDeclinesNonSockets(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if spliceCopy(a, b, time.Second) {
		t.Fatal("net.Pipe has no file descriptor: spliceCopy must decline")
	}
}
