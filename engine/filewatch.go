package engine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sirupsen/logrus"

	"lbd/config"
)

// watchSettle is how long a -filewatch file must stay quiet before it is
// read again: editors and tools write in several steps.
const watchSettle = 50 * time.Millisecond

// fileWatcher keeps the -filewatch files of one configuration current.
// It watches their directories, so a file that is created, replaced by
// rename, or removed is seen as well as one written in place.
type fileWatcher struct {
	w     *fsnotify.Watcher
	files map[string][]config.Watched
	log   logrus.FieldLogger
	done  chan struct{}
	wg    sync.WaitGroup
}

// watchFiles starts following ws; nil when there is nothing to watch.
func watchFiles(ws []config.Watched, log logrus.FieldLogger) (*fileWatcher, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	fw := &fileWatcher{w: w, files: map[string][]config.Watched{}, log: log, done: make(chan struct{})}
	dirs := map[string]bool{}
	for _, x := range ws {
		p := filepath.Clean(x.Path)
		fw.files[p] = append(fw.files[p], x)
		if d := filepath.Dir(p); !dirs[d] {
			dirs[d] = true
			if err := w.Add(d); err != nil {
				w.Close()
				return nil, err
			}
		}
	}
	fw.wg.Add(1)
	go fw.loop()
	return fw, nil
}

func (fw *fileWatcher) loop() {
	defer fw.wg.Done()
	pending := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-fw.done:
			return
		case ev, ok := <-fw.w.Events:
			if !ok {
				return
			}
			p := filepath.Clean(ev.Name)
			if fw.files[p] == nil || ev.Op == fsnotify.Chmod {
				continue
			}
			pending[p] = true
			timer.Reset(watchSettle)
		case err, ok := <-fw.w.Errors:
			if !ok {
				return
			}
			fw.log.Warnf("file watcher: %v", err)
		case <-timer.C:
			for p := range pending {
				fw.reload(p)
				delete(pending, p)
			}
		}
	}
}

// reload reads p again (a missing file empties what it defined) and
// hands the content to everything that watches it.
func (fw *fileWatcher) reload(p string) {
	data, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		fw.log.Errorf("%s: %v; keeping the previous content", p, err)
		return
	}
	// Pound's words (src/watcher.c), which scripts wait for.
	what := "file reloaded"
	if data == nil {
		what = "content cleared"
	}
	for _, x := range fw.files[p] {
		if err := x.Load(data); err != nil {
			fw.log.Errorf("%s: %s: %v; keeping the previous content", x.Pos, p, err)
			continue
		}
		fw.log.Infof("%s: %s: %s", x.Pos, p, what)
	}
}

// Close stops watching and waits for the loop to end.
func (fw *fileWatcher) Close() {
	close(fw.done)
	fw.w.Close()
	fw.wg.Wait()
}
