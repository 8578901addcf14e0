package engine

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"lbd/config"
	"lbd/proxy"
)

func TestAccessLogResolution(t *testing.T) {
	tests := []struct {
		name     string
		global   string
		listener string
		wantNil  bool
		format   proxy.LogFormat
		custom   bool
	}{
		{name: "LogLevel 0 is off", global: "LogLevel 0\n", wantNil: true},
		{name: "null is off", global: "LogLevel \"null\"\n", wantNil: true},
		{name: "default regular", format: proxy.LogRegular},
		{name: "number", global: "LogLevel 3\n", format: proxy.LogVhostCombined},
		{name: "name", global: "LogLevel \"detailed\"\n", format: proxy.LogDetailed},
		{name: "listener overrides", global: "LogLevel 1\n", listener: "\tLogLevel 4\n", format: proxy.LogCombined},
		{name: "listener turns it off", global: "LogLevel 2\n", listener: "\tLogLevel 0\n", wantNil: true},
		{name: "LogFormat definition", global: "LogFormat \"mine\" \"%a %r\"\nLogLevel \"mine\"\n", custom: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.global + "ListenHTTP\n\tAddress 127.0.0.1\n\tPort 8080\n" + tt.listener +
				"\tService\n\t\tBackEnd\n\t\t\tAddress 127.0.0.2\n\t\tEnd\n\tEnd\nEnd\n"
			cfg, _, err := config.LoadBytes("t.cfg", []byte(text), config.LoadOptions{NoDNS: true})
			if err != nil {
				t.Fatal(err)
			}
			al := accessLog(cfg, cfg.Listeners[0])
			switch {
			case tt.wantNil:
				if al != nil {
					t.Fatalf("log on: %+v", al)
				}
			case al == nil:
				t.Fatal("log off")
			case tt.custom:
				if al.Prog == nil || al.Prog.Name != "mine" {
					t.Errorf("program %+v", al.Prog)
				}
			case al.Prog != nil || al.Format != tt.format:
				t.Errorf("format %d (program %v), want %d", al.Format, al.Prog, tt.format)
			}
		})
	}
}

func TestSyslogWriterSendsOneDatagramPerLine(t *testing.T) {
	dir, err := os.MkdirTemp("", "lbdlog")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "log")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	old := syslogPaths
	syslogPaths = []string{path}
	defer func() { syslogPaths = old }()

	w, err := NewSyslogWriter("local3", "pound")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"first line\n", "second"} {
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	want := regexp.MustCompile(`^<158>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d pound\[` + strconv.Itoa(os.Getpid()) + `\]: (first line|second)$`)
	buf := make([]byte, 512)
	for i := 0; i < 2; i++ {
		ln.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := ln.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if !want.Match(buf[:n]) {
			t.Errorf("datagram %q", buf[:n])
		}
	}
}

func TestSyslogWriterDoesNotAllocate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		b := make([]byte, 512)
		for {
			if _, err := ln.Read(b); err != nil {
				return
			}
		}
	}()
	old := syslogPaths
	syslogPaths = []string{path}
	defer func() { syslogPaths = old }()
	w, err := NewSyslogWriter("daemon", "lbd")
	if err != nil {
		t.Fatal(err)
	}
	line := []byte("127.0.0.1 GET / HTTP/1.1 - HTTP/1.1 200 OK\n")
	w.Write(line)
	if n := testing.AllocsPerRun(200, func() { w.Write(line) }); n != 0 {
		t.Errorf("%.1f allocations per line", n)
	}
}
