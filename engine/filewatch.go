package engine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/internal/dirwatch"
	"lbd/internal/msglog"
)

// watchSettle is how long a -filewatch file must stay quiet before it is
// read again: editors and tools write in several steps.
const watchSettle = 50 * time.Millisecond

// fileWatcher keeps the -filewatch files of one configuration current.
// Watching their directories sees a file that is created, replaced by
// rename, or removed as well as one written in place.
type fileWatcher struct {
	dw    *dirwatch.Watcher
	files map[string][]config.Watched
	log   logrus.FieldLogger
}

// watchFiles starts following ws; nil when there is nothing to watch.
func watchFiles(ws []config.Watched, log logrus.FieldLogger) (*fileWatcher, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	fw := &fileWatcher{files: map[string][]config.Watched{}, log: log}
	var dirs []string
	for _, x := range ws {
		p := filepath.Clean(x.Path)
		fw.files[p] = append(fw.files[p], x)
		dirs = append(dirs, filepath.Dir(p))
	}
	dw, err := dirwatch.New(dirwatch.Options{Dirs: dirs, Settle: watchSettle,
		Key: func(ev fsnotify.Event) string {
			p := filepath.Clean(ev.Name)
			if fw.files[p] == nil || ev.Op == fsnotify.Chmod {
				return ""
			}
			return p
		},
		Fire: fw.reload,
		Err:  func(err error) { log.Warnf("file watcher: %v", err) },
	})
	if err != nil {
		return nil, err
	}
	fw.dw = dw
	return fw, nil
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
			fw.log.WithField(msglog.Config, configPos(x.Pos)).Errorf("%s: %s: %v; keeping the previous content", x.Pos, p, err)
			continue
		}
		fw.log.WithField(msglog.Config, configPos(x.Pos)).Infof("%s: %s: %s", x.Pos, p, what)
	}
}

// Close stops watching.
func (fw *fileWatcher) Close() { fw.dw.Close() }
