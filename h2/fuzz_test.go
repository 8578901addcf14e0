package h2

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"lbd/http1"
)

// fieldsFrom splits fuzz input into name/value pairs: "name:value" lines.
func fieldsFrom(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		name, value, _ := strings.Cut(line, "=")
		out = append(out, name, value)
	}
	return out
}

// FuzzRequestFields: whatever fields a client sends, a request that is
// forwarded parses as one strict HTTP/1.1 head whose Host and framing
// are the ones lbd decided, with nothing after it.
func FuzzRequestFields(f *testing.F) {
	f.Add(":method=GET\n:scheme=https\n:path=/\n:authority=h\naccept=*/*", true)
	f.Add(":method=POST\n:scheme=https\n:path=/p\n:authority=h:1\ncontent-length=3", false)
	f.Add(":method=POST\n:scheme=https\n:path=/p\n:authority=h\ncookie=a=1\ncookie=b=2", false)
	f.Add(":method=GET\n:scheme=https\n:path=/\nhost=h\nx-a=1\r\nx-b: 2", true)
	f.Add(":method=GET\n:scheme=https\n:path=/a b\n:authority=h", true)
	f.Fuzz(func(t *testing.T, s string, endStream bool) {
		head, req := build(fieldsFrom(s), endStream)
		if req.malformed || req.status != 0 {
			if head != "" {
				t.Fatalf("refused request produced a head %q", head)
			}
			return
		}
		var r http1.Request
		if err := http1.ParseRequestHead([]byte(head), &r, nil); err != nil {
			// A token the engine does not know as a method is refused
			// there, as when sent over HTTP/1.1.
			if e, ok := err.(*http1.Error); ok && e.Reason == "unknown method" {
				return
			}
			t.Fatalf("head %q does not parse: %v", head, err)
		}
		if r.HeadLen != len(head) {
			t.Fatalf("head %q parses as %d bytes", head, r.HeadLen)
		}
		if r.Chunked != req.chunked || (r.ContentLength >= 0) != (req.declared >= 0 && !req.chunked) {
			t.Fatalf("head %q framing chunked=%v cl=%d, lbd decided chunked=%v declared=%d", head, r.Chunked, r.ContentLength, req.chunked, req.declared)
		}
	})
}

// FuzzHPACKEncode: what the encoder writes, a standard decoder reads
// back unchanged.
func FuzzHPACKEncode(f *testing.F) {
	f.Add(200, "content-type", "text/plain")
	f.Add(418, "x-long", strings.Repeat("v", 300))
	f.Add(599, "set-cookie", "")
	f.Fuzz(func(t *testing.T, status int, name, value string) {
		status = 100 + abs(status)%500
		lname := strings.ToLower(name)
		block := appendField(appendStatus(nil, status), []byte(lname), []byte(value))
		fields, err := hpack.NewDecoder(4096, nil).DecodeFull(block)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(fields) != 2 || fields[0].Name != ":status" || fields[0].Value != itoa3(status) ||
			fields[1].Name != lname || fields[1].Value != value {
			t.Fatalf("round trip gave %v", fields)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}

func itoa3(n int) string {
	return string([]byte{byte('0' + n/100), byte('0' + n/10%10), byte('0' + n%10)})
}

// FuzzConn feeds arbitrary frames (after a valid preface and SETTINGS)
// to a connection: it must neither panic nor hang, and every request
// the proxy receives must be one strict HTTP/1.1 request.
func FuzzConn(f *testing.F) {
	var seed bytes.Buffer
	fr := http2.NewFramer(&seed, nil)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":path", "/"}, {":authority", "h"}, {"content-length", "2"}} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true})
	fr.WriteData(1, true, []byte("ok"))
	fr.WriteWindowUpdate(0, 100)
	fr.WritePing(false, [8]byte{})
	fr.WriteRSTStream(1, http2.ErrCodeCancel)
	f.Add(seed.Bytes())
	f.Add([]byte{0, 0, 1, 1, 5, 0, 0, 0, 3, 0x82}) // HEADERS with one indexed field
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 0, 1})       // CONTINUATION out of place
	f.Fuzz(func(t *testing.T, frames []byte) {
		rec := &recorder{}
		s := New(Options{Handoff: rec.handoff, Log: quietLog(), IdleTimeout: time.Second})
		cl, sv := net.Pipe()
		done := make(chan struct{})
		go func() { s.ServeConn(sv); close(done) }()
		go io.Copy(io.Discard, cl)
		cl.SetDeadline(time.Now().Add(2 * time.Second))
		io.WriteString(cl, http2.ClientPreface)
		http2.NewFramer(cl, nil).WriteSettings()
		cl.Write(frames)
		cl.Close()
		<-done
		rec.wg.Wait()
		if rec.bad > 0 {
			t.Fatalf("the proxy got %d malformed requests", rec.bad)
		}
	})
}
