package listener

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sirupsen/logrus"

	"lbd/internal/dirwatch"
)

// settle is how long a certificate directory must stay quiet before it
// is re-read: tools write the chain and the key in several steps (or
// swap a symlink), and reading in between would only find a file that
// does not load yet.
const settle = 150 * time.Millisecond

// certWatcher reloads a certStore when files change in the directories
// that hold its certificates (renewals replace files: certbot and
// Kubernetes secrets swap symlinks).
type certWatcher struct {
	dw  *dirwatch.Watcher
	st  *certStore
	log logrus.FieldLogger
}

// watchCerts starts watching st's directories.
func watchCerts(st *certStore, log logrus.FieldLogger) (*certWatcher, error) {
	cw := &certWatcher{st: st, log: log}
	dirs := make([]string, len(st.paths))
	for i, p := range st.paths {
		dirs[i] = filepath.Dir(p)
	}
	dw, err := dirwatch.New(dirwatch.Options{Dirs: dirs, Settle: settle,
		Key: func(ev fsnotify.Event) string {
			if strings.HasSuffix(ev.Name, "~") || ev.Op == fsnotify.Chmod {
				return "" // editor backups and attribute changes carry no new content
			}
			return filepath.Dir(ev.Name)
		},
		Fire: func(d string) { cw.report(cw.st.Reload(d)) },
		Err:  func(err error) { log.Warnf("certificate watcher: %v", err) },
	})
	if err != nil {
		return nil, err
	}
	cw.dw = dw
	return cw, nil
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

// Close stops watching.
func (cw *certWatcher) Close() { cw.dw.Close() }
