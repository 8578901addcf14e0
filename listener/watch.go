package listener

import (
	"os"
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
// Kubernetes secrets swap symlinks). Only the files an event names are
// read again; an event on a name no Cert statement covers that is a
// symlink or a directory (a Kubernetes "..data" swap) re-reads the
// certificates of that directory.
type certWatcher struct {
	dw  *dirwatch.Watcher
	st  *certStore
	log logrus.FieldLogger
}

// watchCerts starts watching st's directories.
func watchCerts(st *certStore, log logrus.FieldLogger) (*certWatcher, error) {
	cw := &certWatcher{st: st, log: log}
	dw, err := dirwatch.New(dirwatch.Options{Dirs: st.watchDirs(), Settle: settle,
		Key: func(ev fsnotify.Event) string {
			if strings.HasSuffix(ev.Name, "~") || ev.Op == fsnotify.Chmod {
				return "" // editor backups and attribute changes carry no new content
			}
			return filepath.Clean(ev.Name)
		},
		FireAll: cw.changed,
		Err:     func(err error) { log.Warnf("certificate watcher: %v", err) },
	})
	if err != nil {
		return nil, err
	}
	cw.dw = dw
	return cw, nil
}

// changed reloads the files named by a settled burst of events.
func (cw *certWatcher) changed(paths []string) {
	rs, stray := cw.st.ReloadFiles(paths)
	cw.report(rs)
	rescanned := map[string]bool{}
	for _, p := range stray {
		d := filepath.Dir(p)
		if rescanned[d] {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && (fi.Mode()&os.ModeSymlink != 0 || fi.IsDir()) {
			rescanned[d] = true
			cw.report(cw.st.Reload(d))
		}
	}
}

func (cw *certWatcher) report(rs []reloaded) {
	for _, r := range rs {
		switch {
		case r.Err != nil && r.Added:
			cw.log.Errorf("%s: new certificate file not loaded: %v", r.Path, r.Err)
		case r.Err != nil:
			cw.log.Errorf("%s: keeping the previous certificate: %v", r.Path, r.Err)
		case r.Removed:
			cw.log.Infof("%s: certificate removed", r.Path)
		case r.Added:
			cw.log.Infof("%s: certificate added (%s)", r.Path, r.Subject)
		default:
			cw.log.Infof("%s: certificate reloaded (%s)", r.Path, r.Subject)
		}
	}
}

// Close stops watching.
func (cw *certWatcher) Close() { cw.dw.Close() }
