package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
)

// Seeds beyond testdata/fuzz/<Target>/, so they also run in plain go test.
var requestSeeds = []string{
	browserReq,
	"PURGE /a?b HTTP/1.1\r\nHost: x\r\n\r\n",
	twentyHeaderReq,
	post + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG",
	post + "Transfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
	"GET http://a.example/x HTTP/1.1\r\nHost: b\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
}

var validStatus = map[int]bool{400: true, 413: true, 414: true, 417: true, 501: true}

func FuzzParseRequestHead(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	purge := DefaultLimits
	purge.Purge = true
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Request
		err := ParseRequestHead(data, &r, nil)
		// Limits.Purge changes nothing but whether PURGE is a method.
		var rp Request
		perr := ParseRequestHead(data, &rp, &purge)
		switch {
		case perr == nil && rp.MethodID == MethodPURGE:
			if err != errUnknownMethod {
				t.Fatalf("PURGE without Limits.Purge: %v, want the unknown method", err)
			}
		case err == errUnknownMethod && bytes.HasPrefix(bytes.TrimLeft(data, "\r\n"), []byte("PURGE ")):
			// A PURGE head the parser then refuses or waits for more of.
		case (perr == nil) != (err == nil) || (err != nil && err.Error() != perr.Error()):
			t.Fatalf("Limits.Purge changed the outcome: %v, then %v", err, perr)
		}
		var e *Error
		switch {
		case errors.Is(err, ErrNeedMore):
			if len(data) > DefaultLimits.MaxHead {
				t.Fatalf("ErrNeedMore with %d bytes > MaxHead", len(data))
			}
			return
		case errors.As(err, &e):
			if !validStatus[e.Status] {
				t.Fatalf("unexpected status %d (%s)", e.Status, e.Reason)
			}
			return
		case err != nil:
			t.Fatalf("error of unexpected type: %v", err)
		}
		checkParsedRequest(t, data, &r)
	})
}

// checkParsedRequest holds the invariants of an accepted head.
func checkParsedRequest(t *testing.T, data []byte, r *Request) {
	t.Helper()
	if r.HeadLen < 4 || r.HeadLen > len(data) || !bytes.HasSuffix(data[:r.HeadLen], []byte("\r\n\r\n")) {
		t.Fatalf("HeadLen %d does not end a head in %q", r.HeadLen, data)
	}
	if r.MethodID == MethodUnknown || r.Minor > 1 || (r.Minor == 1 && r.Host == nil) {
		t.Fatalf("accepted odd request: method %v minor %d host %q", r.MethodID, r.Minor, r.Host)
	}
	if r.Chunked && r.ContentLength != -1 {
		t.Fatalf("chunked with Content-Length %d", r.ContentLength)
	}
	// The head alone parses the same; any shorter prefix only asks for more.
	var r2 Request
	if err := ParseRequestHead(data[:r.HeadLen], &r2, nil); err != nil || r2.HeadLen != r.HeadLen {
		t.Fatalf("re-parse of head: err %v, HeadLen %d vs %d", err, r2.HeadLen, r.HeadLen)
	}
	for _, k := range []int{r.HeadLen - 1, r.HeadLen / 2, 1} {
		if err := ParseRequestHead(data[:k], &r2, nil); !errors.Is(err, ErrNeedMore) {
			t.Fatalf("prefix %d of a valid head: err %v, want ErrNeedMore", k, err)
		}
	}
}

var chunkSeeds = []string{
	"5\r\nhello\r\n0\r\n\r\n",
	"4\r\nSEE-THIS\r\n0\r\n\r\n",
	"0x5\r\nhello\r\n0\r\n\r\n",
	"5;a=\"b c\"\r\nhello\r\n0\r\nX-A: b\r\n\r\nGET / HTTP/1.1\r\n",
}

func FuzzChunkScanner(f *testing.F) {
	for i, s := range chunkSeeds {
		f.Add([]byte(s), uint64(i))
	}
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		n1, done1, err1 := scanAll(body, 0)
		n2, done2, err2 := scanRandomSplits(body, seed)
		if n1 != n2 || done1 != done2 || err1 != err2 {
			t.Fatalf("whole: %d %v %v; split: %d %v %v", n1, done1, err1, n2, done2, err2)
		}
		if n1 > len(body) {
			t.Fatalf("consumed %d > len %d", n1, len(body))
		}
		if done1 {
			if n, done, err := scanAll(body[:n1], 0); n != n1 || !done || err != nil {
				t.Fatalf("re-scan of the body alone: %d %v %v", n, done, err)
			}
		}
	})
}

// scanRandomSplits feeds body in random pieces (some empty), using Skip for
// part of the payload when the scanner offers it.
func scanRandomSplits(body []byte, seed uint64) (int, bool, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var c ChunkScanner
	total := 0
	for off := 0; off <= len(body); {
		if rem := c.Remaining(); rem > 0 && off < len(body) && rng.IntN(2) == 0 {
			k := min(int(rem), len(body)-off, rng.IntN(int(min(rem, 64)))+1)
			if !c.Skip(int64(k)) {
				return total, false, errors.New("Skip refused a valid count")
			}
			off += k
			total += k
			continue
		}
		end := off + rng.IntN(len(body)-off+1)
		n, done, err := c.Scan(body[off:end])
		total += n
		if err != nil || done || off == len(body) {
			return total, done, err
		}
		off = end
	}
	return total, false, nil
}

func FuzzDifferential(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Request
		if ParseRequestHead(data, &r, nil) != nil {
			return
		}
		g, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return // Go is stricter here (URL escapes, ...): not a disagreement we care about
		}
		if g.Method != string(r.Method) || g.RequestURI != string(r.Target) || g.ProtoMinor != r.Minor {
			t.Fatalf("request line: go %q %q 1.%d; lbd %q %q 1.%d", g.Method, g.RequestURI, g.ProtoMinor, r.Method, r.Target, r.Minor)
		}
		if g.Host != string(r.Host) {
			t.Fatalf("host: go %q, lbd %q", g.Host, r.Host)
		}
		want := http.Header{}
		for _, h := range r.Headers {
			k := http.CanonicalHeaderKey(string(h.Name))
			if k != "Host" && k != "Transfer-Encoding" {
				want[k] = append(want[k], string(h.Value))
			}
		}
		for k, v := range g.Header {
			if !slices.Equal(v, want[k]) {
				t.Fatalf("header %q: go %q, lbd %q", k, v, want[k])
			}
		}
		if len(g.Header) != len(want) {
			t.Fatalf("header count: go %d, lbd %d", len(g.Header), len(want))
		}
		compareBodies(t, data, &r, g)
	})
}

// compareBodies checks the body when both sides can read all of it.
func compareBodies(t *testing.T, data []byte, r *Request, g *http.Request) {
	t.Helper()
	gb, gerr := io.ReadAll(g.Body)
	rest := data[r.HeadLen:]
	var ours []byte
	switch r.BodyKind() {
	case BodyNone:
		ours = []byte{}
	case BodyLength:
		if int64(len(rest)) < r.ContentLength {
			return
		}
		ours = rest[:r.ContentLength]
	case BodyChunked:
		var ok bool
		if ours, ok = decodeChunked(rest); !ok {
			return
		}
	}
	if gerr != nil {
		return
	}
	if !bytes.Equal(gb, ours) {
		t.Fatalf("body: go %q, lbd %q", gb, ours)
	}
}

// decodeChunked returns the payload of a chunked body that ChunkScanner
// accepts completely (the test's reference decoder relies on that).
func decodeChunked(raw []byte) ([]byte, bool) {
	var c ChunkScanner
	n, done, err := c.Scan(raw)
	if err != nil || !done {
		return nil, false
	}
	raw = raw[:n]
	out := []byte{}
	for {
		line := raw[:bytes.IndexByte(raw, '\n')+1]
		raw = raw[len(line):]
		var size int
		for _, b := range line {
			if charClass[b]&cHex == 0 {
				break
			}
			size = size<<4 | int(hexVal[b])
		}
		if size == 0 {
			return out, true
		}
		out = append(out, raw[:size]...)
		raw = raw[size+2:]
	}
}

func FuzzParseResponseHead(f *testing.F) {
	f.Add([]byte(typicalResp), false)
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		var r Response
		err := ParseResponseHead(data, &r, head)
		var e *Error
		switch {
		case errors.Is(err, ErrNeedMore):
			return
		case errors.As(err, &e):
			if e.Status != 502 {
				t.Fatalf("status %d, want 502", e.Status)
			}
			return
		case err != nil:
			t.Fatalf("error of unexpected type: %v", err)
		}
		if r.HeadLen > len(data) || !bytes.HasSuffix(data[:r.HeadLen], []byte("\r\n\r\n")) {
			t.Fatalf("HeadLen %d does not end a head", r.HeadLen)
		}
		if r.Chunked && r.ContentLength != -1 {
			t.Fatalf("chunked with Content-Length %d", r.ContentLength)
		}
		if r.BodyKind(head) == BodyUntilClose && r.KeepAlive {
			t.Fatal("body until close on a connection kept alive")
		}
		for _, k := range []int{r.HeadLen - 1, r.HeadLen / 2} {
			if err := ParseResponseHead(data[:k], &r, head); !errors.Is(err, ErrNeedMore) {
				t.Fatalf("prefix %d of a valid head: err %v, want ErrNeedMore", k, err)
			}
		}
	})
}
