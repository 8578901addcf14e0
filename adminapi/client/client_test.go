package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echo answers with the method, path, content type and body it received,
// 404 for /missing, and zproxy's 204-with-body for /z204.
func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch r.URL.Path {
	case "/missing":
		http.Error(w, "no such object", http.StatusNotFound)
	case "/z204":
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 204 No Content\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"result\":\"ok\"}")
		rw.Flush()
	case "/big", "/big-chunked":
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", strconv.Itoa(len(bigReply)))
		}
		io.WriteString(w, bigReply)
	default:
		io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Content-Type")+" "+string(body))
	}
}

// bigReply is a reply of 1 MB and a bit, of varied bytes.
var bigReply = strings.Repeat("0123456789abcdef", 1<<16) + "end"

// TestLargeReplies: a large reply arrives whole, read into a buffer of
// its Content-Length or, chunked, grown as it comes.
func TestLargeReplies(t *testing.T) {
	c, err := New(unixServer(t), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/big", "/big-chunked"} {
		t.Run(path, func(t *testing.T) {
			body, err := c.Get(path)
			if err != nil || string(body) != bigReply {
				t.Fatalf("got %d bytes (%v), want %d", len(body), err, len(bigReply))
			}
		})
	}
}

// unixServer serves echo on a UNIX socket and returns its path.
func unixServer(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(echo)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return path
}

func TestDo(t *testing.T) {
	sock := unixServer(t)
	web := httptest.NewServer(http.HandlerFunc(echo))
	defer web.Close()
	tests := []struct {
		name, target, method, path string
		body                       any
		status                     int
		want                       string
		wantErr                    string
	}{
		{name: "GET over the socket", target: sock, method: "GET", path: "/listener/1?indent=2",
			status: 200, want: "GET /listener/1?indent=2  "},
		{name: "path without slash", target: sock, method: "GET", path: "core", status: 200, want: "GET /core  "},
		{name: "JSON body", target: sock, method: "PATCH", path: "/x", body: map[string]string{"status": "active"},
			status: 200, want: `PATCH /x application/json {"status":"active"}`},
		{name: "raw body", target: sock, method: "PUT", path: "/x", body: `{"a":1}`,
			status: 200, want: `PUT /x application/json {"a":1}`},
		{name: "non-2xx is an error with the status text", target: sock, method: "GET", path: "/missing",
			status: 404, want: "no such object\n", wantErr: "Not Found"},
		{name: "204 with a body is accepted", target: sock, method: "DELETE", path: "/z204", status: 204, want: ""},
		{name: "URL target keeps its prefix", target: web.URL + "/control/", method: "GET", path: "/core",
			status: 200, want: "GET /control/core  "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.target, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			status, body, err := c.Do(tc.method, tc.path, tc.body)
			if status != tc.status || string(body) != tc.want {
				t.Errorf("got %d %q, want %d %q", status, body, tc.status, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "":
				var se *StatusError
				if !errors.As(err, &se) || se.Error() != tc.wantErr || se.Status != tc.status {
					t.Errorf("error %v, want StatusError %q", err, tc.wantErr)
				}
			}
		})
	}
}

func TestGet(t *testing.T) {
	c, err := New(unixServer(t), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // connections are not reused after a 204-with-body
		if _, _, err := c.Do("DELETE", "/z204", nil); err != nil {
			t.Fatal(err)
		}
		body, err := c.Get("/core")
		if err != nil || string(body) != "GET /core  " {
			t.Fatalf("Get: %q %v", body, err)
		}
	}
}

func TestErrorsNameTheSocket(t *testing.T) {
	tests := []struct{ name, target, want string }{
		{name: "missing socket", target: "/nonexistent/lbd.ctl", want: "control socket /nonexistent/lbd.ctl: "},
		{name: "empty target", target: "", want: "no socket path or URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.target, time.Second)
			if err == nil {
				_, err = c.Get("/")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "http://localhost") {
				t.Errorf("error mentions the fake host: %v", err)
			}
		})
	}
}

// TestNewTLS checks that the TLS configuration reaches an https:// server
// and nothing else.
func TestNewTLS(t *testing.T) {
	sock := unixServer(t)
	web := httptest.NewServer(http.HandlerFunc(echo))
	defer web.Close()
	secure := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	secure.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	secure.StartTLS()
	defer secure.Close()
	trusted := x509.NewCertPool()
	trusted.AddCert(secure.Certificate())
	// A config no server would pass: it must not be used off https.
	untrusted := &tls.Config{RootCAs: x509.NewCertPool()}
	tests := []struct {
		name, target string
		tc           *tls.Config
		wantErr      string
	}{
		{name: "nil config verifies against the system", target: secure.URL, wantErr: "certificate signed by unknown authority"},
		{name: "RootCAs", target: secure.URL, tc: &tls.Config{RootCAs: trusted}},
		{name: "InsecureSkipVerify", target: secure.URL, tc: &tls.Config{InsecureSkipVerify: true}},
		{name: "empty pool", target: secure.URL, tc: untrusted, wantErr: "certificate signed by unknown authority"},
		{name: "not used for a socket", target: sock, tc: untrusted},
		{name: "not used for http", target: web.URL, tc: untrusted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewTLS(tc.target, 5*time.Second, tc.tc)
			if err != nil {
				t.Fatal(err)
			}
			body, err := c.Get("/core")
			switch {
			case tc.wantErr == "" && (err != nil || string(body) != "GET /core  "):
				t.Errorf("got %q, %v", body, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestAsksForJSON: every request accepts JSON, which makes lbd answer
// its refusals with their reason (adminapi's refusal.go).
func TestAsksForJSON(t *testing.T) {
	got := make(chan string, 1)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Accept")
	}))
	defer web.Close()
	c, err := New(web.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Do(http.MethodGet, "/core", nil); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a != "application/json" {
		t.Errorf("Accept %q, want application/json", a)
	}
}
