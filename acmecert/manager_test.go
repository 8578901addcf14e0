package acmecert

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"go.uber.org/zap"
)

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(&bytes.Buffer{})
	return l
}

// TestNewStorage: the directory is created 0700 and must be writable; a
// path that cannot be a directory is refused with the reason.
func TestNewStorage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, storage, err string
	}{
		{name: "created", storage: filepath.Join(dir, "a", "b")},
		{name: "under a file", storage: filepath.Join(file, "acme"), err: "ACME storage: mkdir " + file + ": not a directory"},
		{name: "none", storage: "", err: "no ACME storage directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Account{Directory: "https://127.0.0.1:1/dir", StorageDir: tc.storage}, quietLogger())
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m.Close()
			fi, err := os.Stat(tc.storage)
			if err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("storage: %v %v, want a 0700 directory", fi.Mode(), err)
			}
			left, err := os.ReadDir(tc.storage)
			if err != nil || len(left) != 0 {
				t.Errorf("the write test left %v (%v)", left, err)
			}
		})
	}
}

// TestAddNames: a name belongs to one listener, in any case; bad CA
// roots are refused.
func TestAddNames(t *testing.T) {
	m, err := New(Account{Directory: "https://127.0.0.1:1/dir", StorageDir: t.TempDir()}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Add(Site{Names: []string{"a.example.com"}, HTTPAddr: "127.0.0.1:8080"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Add(Site{Names: []string{"A.example.com"}, TLSAddr: "127.0.0.1:8443"}); err == nil || !strings.Contains(err.Error(), "already an automatic name") {
		t.Errorf("a name on two listeners: %v", err)
	}
	bad, err := New(Account{Directory: "https://127.0.0.1:1/dir", StorageDir: t.TempDir(), Roots: []byte("not PEM")}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Add(Site{Names: []string{"b.example.com"}, HTTPAddr: "127.0.0.1:8080"}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("CA roots without a certificate: %v", err)
	}
	st := m.Status()
	if len(st) != 1 || st[0].Name != "a.example.com" || st[0].Serial != "" || st[0].LastError != "" {
		t.Errorf("status before any order: %+v", st)
	}
}

// TestZapBridge: certmagic's records reach logrus, Info demoted to
// Debug, with their fields.
func TestZapBridge(t *testing.T) {
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetLevel(logrus.InfoLevel)
	z := zapLogger(l).Named("obtain")
	z.Info("acquiring lock")
	z.Warn("slow", zap.String("identifier", "a.example.com"))
	z.Error("could not get certificate")
	out := buf.String()
	for _, want := range []string{`level=warning msg="ACME: obtain: slow" identifier=a.example.com`, `level=error msg="ACME: obtain: could not get certificate"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "acquiring lock") {
		t.Errorf("Info reached the Info level:\n%s", out)
	}
}
