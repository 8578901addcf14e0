package dirwatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TestFiresOnceChangesSettle: writes to a watched file, in several steps,
// end in one Fire with the file's key; other files are ignored.
func TestFiresOnceChangesSettle(t *testing.T) {
	dir := t.TempDir()
	want := filepath.Join(dir, "watched")
	fired := make(chan string, 8)
	dw, err := New(Options{Dirs: []string{dir, dir}, Settle: 50 * time.Millisecond,
		Key: func(ev fsnotify.Event) string {
			if filepath.Clean(ev.Name) != want {
				return ""
			}
			return want
		},
		Fire: func(k string) { fired <- k },
		Err:  func(err error) { t.Error(err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dw.Close()
	for _, name := range []string{"other", "watched", "watched"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case k := <-fired:
		if k != want {
			t.Fatalf("fired %q, want %q", k, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Fire after the writes")
	}
	select {
	case k := <-fired:
		t.Fatalf("a second Fire (%q) for one settled burst", k)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestFireAllBatches: with FireAll, a burst over several files ends in
// one call naming each of them once, sorted.
func TestFireAllBatches(t *testing.T) {
	dir := t.TempDir()
	fired := make(chan []string, 8)
	dw, err := New(Options{Dirs: []string{dir}, Settle: 50 * time.Millisecond,
		Key:     func(ev fsnotify.Event) string { return filepath.Base(ev.Name) },
		FireAll: func(keys []string) { fired <- keys },
		Err:     func(err error) { t.Error(err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dw.Close()
	for _, name := range []string{"b", "a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case keys := <-fired:
		if strings.Join(keys, ",") != "a,b,c" {
			t.Fatalf("FireAll(%v), want [a b c]", keys)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no FireAll after the writes")
	}
	select {
	case keys := <-fired:
		t.Fatalf("a second FireAll (%v) for one settled burst", keys)
	case <-time.After(200 * time.Millisecond):
	}
}
