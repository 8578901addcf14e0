// Package dirwatch follows directories with fsnotify and reports, once
// they have been quiet for a moment, which watched things changed. It
// watches directories rather than files because tools replace files
// (rename, symlink swap) and a watch on the old inode would miss that.
package dirwatch

import (
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options say what to watch and what to do.
type Options struct {
	Dirs []string
	// Settle is how long the changes must stop before Fire runs: writers
	// work in several steps, and reading in between finds half a file.
	Settle time.Duration
	// Key maps an event to what changed ("" to ignore the event).
	Key func(ev fsnotify.Event) string
	// Fire is called with each changed key once things are quiet.
	Fire func(key string)
	// FireAll, when set instead of Fire, is called once with every
	// changed key (sorted): a burst touching many files is then one
	// reload, not one per file.
	FireAll func(keys []string)
	// Err reports a watcher error.
	Err func(error)
}

// Watcher is a running watch; Close stops it.
type Watcher struct {
	w    *fsnotify.Watcher
	o    Options
	done chan struct{}
	wg   sync.WaitGroup
}

// New starts watching o.Dirs (each once).
func New(o Options) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, d := range o.Dirs {
		d = filepath.Clean(d)
		if seen[d] {
			continue
		}
		seen[d] = true
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, err
		}
	}
	dw := &Watcher{w: w, o: o, done: make(chan struct{})}
	dw.wg.Add(1)
	go dw.loop()
	return dw, nil
}

func (dw *Watcher) loop() {
	defer dw.wg.Done()
	pending := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-dw.done:
			return
		case ev, ok := <-dw.w.Events:
			if !ok {
				return
			}
			if k := dw.o.Key(ev); k != "" {
				pending[k] = true
				timer.Reset(dw.o.Settle)
			}
		case err, ok := <-dw.w.Errors:
			if !ok {
				return
			}
			dw.o.Err(err)
		case <-timer.C:
			if dw.o.FireAll != nil {
				keys := slices.Sorted(maps.Keys(pending))
				clear(pending)
				dw.o.FireAll(keys)
				continue
			}
			for k := range pending {
				dw.o.Fire(k)
				delete(pending, k)
			}
		}
	}
}

// Close stops watching and waits for the loop to end.
func (dw *Watcher) Close() {
	close(dw.done)
	dw.w.Close()
	dw.wg.Wait()
}
