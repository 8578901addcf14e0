package adminapi

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// socketPath returns a short socket path in a fresh directory (t.TempDir
// paths can exceed the 108-byte sun_path limit).
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "adm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "ctl.sock")
}

// testServer is a Server on a real socket with its audit log captured.
type testServer struct {
	path string
	srv  *Server
	hook *test.Hook
	// served receives every RequestLog call. The server logs after the
	// reply is on the wire, so tests wait here before looking at logs.
	served chan RequestInfo
}

func startServer(t *testing.T, h http.Handler) *testServer {
	t.Helper()
	ts := &testServer{path: socketPath(t), served: make(chan RequestInfo, 64)}
	ln, err := Listen(ts.path, 0)
	if err != nil {
		t.Fatal(err)
	}
	logger, hook := test.NewNullLogger()
	ts.hook = hook
	ts.srv = NewServer(h)
	ts.srv.Logger = logger
	ts.srv.RequestLog = func(ri RequestInfo) { ts.served <- ri }
	done := make(chan error, 1)
	go func() { done <- ts.srv.Serve(ln) }()
	t.Cleanup(func() {
		ts.srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

// raw sends a raw request and returns everything the server wrote before
// closing the connection.
func (ts *testServer) raw(t *testing.T, req string) string {
	t.Helper()
	c, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(c, req) // may fail once the server has answered
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading reply: %v", err)
	}
	return string(out)
}

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const zproxyTail = "Expires: now\r\nPragma: no-cache\r\nServer: zproxy/\r\nCache-control: no-cache,no-store\r\n\r\n"

// TestWireFormat checks status lines, header sets and header order byte for
// byte, which only a real connection shows.
func TestWireFormat(t *testing.T) {
	zp := startServer(t, NewZproxyHandler(newFake()))
	pd := startServer(t, NewPoundHandler(newFake()))
	sessions := golden(t, "zproxy_service_sessions.json")
	core := golden(t, "pound_core.json")
	page404 := `<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN"><html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL was not found on this server.</p></body></html>`
	big := strings.Repeat("x", MaxBodyBytes+1)
	tooLong := `{"result":"error","reason":"CTL request too long."}`
	tests := []struct {
		name string
		ts   *testServer
		req  string
		want string
	}{
		{name: "zproxy GET", ts: zp,
			req:  "GET /listener/0/service/web/sessions HTTP/1.1\r\nHost: localhost\r\n\r\n",
			want: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(sessions)) + "\r\n" + zproxyTail + sessions},
		{name: "zproxy 405 has no body", ts: zp,
			req:  "POST /listeners HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n",
			want: "HTTP/1.1 405 Method Not Allowed\r\n" + zproxyTail},
		{name: "zproxy 400 has no body", ts: zp,
			req:  "GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n",
			want: "HTTP/1.1 400 Bad Request\r\n" + zproxyTail},
		{name: "zproxy 204 still sends the ok body", ts: zp,
			req:  "DELETE /listener/0/service/web/sessions HTTP/1.1\r\nHost: localhost\r\n\r\n",
			want: "HTTP/1.1 204 No Content\r\nContent-Type: application/json\r\nContent-Length: 15\r\n" + zproxyTail + `{"result":"ok"}`},
		{name: "zproxy body too large", ts: zp,
			req:  "PATCH /sessions HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big,
			want: "HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(tooLong)) + "\r\n" + zproxyTail + tooLong},
		{name: "pound JSON", ts: pd,
			req:  "GET /core HTTP/1.1\r\nHost: localhost\r\n\r\n",
			want: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(core)) + "\r\nConnection: close\r\n\r\n" + core},
		{name: "pound error page answers in the request's version", ts: pd,
			req: "GET /nope HTTP/1.0\r\n\r\n",
			want: "HTTP/1.0 404 Not Found\r\nContent-Type: text/html\r\nExpires: now\r\nPragma: no-cache\r\nCache-control: no-cache,no-store\r\nContent-Length: " +
				strconv.Itoa(len(page404)) + "\r\nConnection: close\r\n\r\n" + page404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ts.raw(t, tc.req); got != tc.want {
				t.Errorf("reply\n got: %q\nwant: %q", trim(got), trim(tc.want))
			}
		})
	}
}

// trim shortens long replies in failure messages.
func trim(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

func TestAuditLog(t *testing.T) {
	ts := startServer(t, NewPoundHandler(newFake()))
	tests := []struct {
		name   string
		req    string
		logged bool
		level  logrus.Level
		status int
	}{
		{name: "read is not audited", req: "GET /core HTTP/1.1\r\nHost: x\r\n\r\n", status: 200},
		{name: "change is audited", req: "DELETE /listener/1/0/0 HTTP/1.1\r\nHost: x\r\n\r\n", logged: true, level: logrus.InfoLevel, status: 200},
		// lbctl route: a POST that only asks, not a change.
		{name: "dry-run route is not audited", req: "POST /route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", status: 501},
		{name: "refused change is audited as a warning", req: "DELETE /listener/0 HTTP/1.1\r\nHost: x\r\n\r\n", logged: true, level: logrus.WarnLevel, status: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts.hook.Reset()
			ts.raw(t, tc.req)
			var ri RequestInfo
			select {
			case ri = <-ts.served:
			case <-time.After(10 * time.Second):
				t.Fatal("RequestLog was not called")
			}
			if ri.Status != tc.status || ri.Peer.PID != os.Getpid() || ri.Peer.UID != os.Getuid() {
				t.Errorf("RequestLog got %+v", ri)
			}
			entries := ts.hook.AllEntries()
			if !tc.logged {
				if len(entries) != 0 {
					t.Fatalf("unexpected audit entries: %v", entries)
				}
				return
			}
			if len(entries) != 1 {
				t.Fatalf("%d audit entries, want 1", len(entries))
			}
			e := entries[0]
			if e.Level != tc.level {
				t.Errorf("level %v, want %v", e.Level, tc.level)
			}
			want := logrus.Fields{"pid": os.Getpid(), "uid": os.Getuid(), "gid": os.Getgid(), "status": tc.status}
			for k, v := range want {
				if e.Data[k] != v {
					t.Errorf("field %s = %v, want %v", k, e.Data[k], v)
				}
			}
		})
	}
}

func TestListenMode(t *testing.T) {
	tests := []struct {
		name string
		mode os.FileMode
		want os.FileMode
	}{
		{name: "default is 0600", mode: 0, want: 0o600},
		{name: "configured mode", mode: 0o660, want: 0o660},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := socketPath(t)
			ln, err := Listen(path, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != tc.want {
				t.Errorf("mode %v, want socket %v", fi.Mode(), tc.want)
			}
		})
	}
}

func TestListenRefuses(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		want    error
	}{
		{name: "live socket", want: ErrSocketInUse, prepare: func(t *testing.T, path string) {
			ln, err := Listen(path, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
		}},
		{name: "regular file", want: ErrNotSocket, prepare: func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "directory", want: ErrNotSocket, prepare: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlink to a socket", want: ErrNotSocket, prepare: func(t *testing.T, path string) {
			target := path + ".real"
			ln, err := Listen(target, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := socketPath(t)
			tc.prepare(t, path)
			before, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := Listen(path, 0)
			if err == nil {
				ln.Close()
				t.Fatal("Listen succeeded")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want %v naming the path", err, tc.want)
			}
			after, err := os.Lstat(path)
			if err != nil || !os.SameFile(before, after) {
				t.Errorf("the existing file was replaced or removed (%v)", err)
			}
		})
	}
}

func TestListenRemovesStaleSocket(t *testing.T) {
	path := socketPath(t)
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false) // what a crash leaves behind
	old.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket missing: %v", err)
	}
	ln, err := Listen(path, 0)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("new socket does not accept: %v", err)
	}
	c.Close()
}

func TestServerCloseRemovesSocket(t *testing.T) {
	path := socketPath(t)
	ln, err := Listen(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(NewPoundHandler(newFake()))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	c, err := net.Dial("unix", path) // the server is up
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve returned %v after Close", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after Close: %v", err)
	}
}
