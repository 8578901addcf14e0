package functionaltests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestH2FramesRetryAfterDeadBackend: an h2c client's request whose first
// backend fails to connect goes to the next one with its body and the
// same Content-Length (it was announced as 0 on the retry, which the
// backend reset as malformed), a length declared or a body complete.
func TestH2FramesRetryAfterDeadBackend(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close() // connects are refused
	good := h2cBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%q %d %v", body, r.ContentLength, err)
	}))
	lbd := startLBD(t, grpcConfig("", "", h2Backend(deadPort), h2Backend(good)))
	client := h2cClient()
	for i, length := range []bool{true, false, true, false} {
		var body io.Reader = strings.NewReader("ping")
		want := `"ping" 4 <nil>`
		if !length {
			// Chunked: a body complete in lbd's buffer is sent with its
			// length, one still coming without.
			body = io.MultiReader(strings.NewReader("pi"), strings.NewReader("ng"))
		}
		resp, err := client.Post("http://"+lbd.addr+"/", "text/plain", body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body) // a short read fails the comparison
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != want && (length || string(got) != `"ping" -1 <nil>`) {
			t.Errorf("request %d: %s %s, want %s", i, resp.Status, got, want)
		}
	}
}
