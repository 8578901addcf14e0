package listener

import (
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sirupsen/logrus"
)

// settle is how long a certificate directory must stay quiet before it
// is re-read: tools write the chain and the key in several steps (or
// swap a symlink), and reading in between would only find a file that
// does not load yet.
const settle = 150 * time.Millisecond

// certWatcher reloads a certStore when files change in the directories
// that hold its certificates. It watches directories, not files,
// because renewals usually replace files (rename, symlink swap as
// certbot and Kubernetes secrets do), which a watch on the old inode
// would miss.
type certWatcher struct {
	w    *fsnotify.Watcher
	st   *certStore
	log  logrus.FieldLogger
	done chan struct{}
	wg   sync.WaitGroup
}

// watchCerts starts watching st's directories.
func watchCerts(st *certStore, log logrus.FieldLogger) (*certWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	cw := &certWatcher{w: w, st: st, log: log, done: make(chan struct{})}
	seen := map[string]bool{}
	for _, p := range st.paths {
		d := filepath.Dir(p)
		if seen[d] {
			continue
		}
		seen[d] = true
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, err
		}
	}
	cw.wg.Add(1)
	go cw.loop()
	return cw, nil
}

func (cw *certWatcher) loop() {
	defer cw.wg.Done()
	pending := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-cw.done:
			return
		case ev, ok := <-cw.w.Events:
			if !ok {
				return
			}
			if strings.HasSuffix(ev.Name, "~") || ev.Op == fsnotify.Chmod {
				continue // editor backups and attribute changes carry no new content
			}
			pending[filepath.Dir(ev.Name)] = true
			timer.Reset(settle)
		case err, ok := <-cw.w.Errors:
			if !ok {
				return
			}
			cw.log.Warnf("certificate watcher: %v", err)
		case <-timer.C:
			for d := range pending {
				cw.report(cw.st.Reload(d))
				delete(pending, d)
			}
		}
	}
}

func (cw *certWatcher) report(rs []reloaded) {
	for _, r := range rs {
		if r.Err != nil {
			cw.log.Errorf("%s: keeping the previous certificate: %v", r.Path, r.Err)
		} else {
			cw.log.Infof("%s: certificate reloaded (%s)", r.Path, r.Subject)
		}
	}
}

// Close stops watching and waits for the loop to end.
func (cw *certWatcher) Close() {
	close(cw.done)
	cw.w.Close()
	cw.wg.Wait()
}
