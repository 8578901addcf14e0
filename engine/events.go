package engine

import (
	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
	"lbd/internal/msglog"
)

// The dashboard's timeline (adminapi.Events) learns of a backend going
// down or up from the backend's own log calls: backend.SetAlive logs
// every flip exactly once, with the probe's or the connect's reason,
// and the engine gives each backend it builds a logger that also
// records those two messages. The backend package stays unaware of the
// timeline, and nothing is added to the request path (SetAlive runs on
// flips only).

// Formats backend.SetAlive logs with (Pound's words); engine tests
// check they still match (TestBackendEventsRecorded).
const (
	deadFormat        = "Backend %s dead (%s)"
	resurrectedFormat = "Backend %s resurrected"
)

// backendLog is the logger of a backend (backend.Logger). Its messages
// carry the service's source fields (shared by the service's backends),
// the backend's address and where the file defines it, and the dead and
// resurrected ones go to the timeline too. The logrus entry is put
// together when a message is written, which is rare: kept ready for each
// backend it cost ~480 bytes, 9 MB at 20,000 backends (issue 36). The
// logger and the timeline are the service's (src), not a copy each.
type backendLog struct {
	src  *serviceSource // the service's, shared
	addr string         // the address dialled, as the timeline names it
	at   config.Point   // where the backend is defined (zero: unknown)
}

// newBackendLog is the logger of a backend dialled at addr and defined
// at pos, for a service whose messages carry src.
func newBackendLog(src *serviceSource, addr string, pos config.Locus) backendLog {
	return backendLog{src: src, addr: addr, at: pos.Start()}
}

func (l backendLog) entry() logrus.FieldLogger {
	if l.src.base == nil { // tests that build graphs alone
		return logrus.StandardLogger()
	}
	where := ""
	if file, line := l.at.File(), l.at.Line(); file != "" && line != 0 {
		where = msglog.ConfigPos(file, line)
	}
	f := l.src.fields()
	f[msglog.Backend], f[msglog.Config] = l.addr, where
	return l.src.base.WithFields(f)
}

func (l backendLog) Warnf(format string, args ...any) {
	if events := l.src.events; events != nil && format == deadFormat && len(args) == 2 {
		reason, ok := args[1].(string)
		if !ok {
			reason = "unknown reason"
		}
		events.Add(adminapi.Event{Kind: adminapi.EventDown, Object: "backend " + l.addr, Detail: reason})
	}
	l.entry().Warnf(format, args...)
}

func (l backendLog) Infof(format string, args ...any) {
	if events := l.src.events; events != nil && format == resurrectedFormat {
		events.Add(adminapi.Event{Kind: adminapi.EventUp, Object: "backend " + l.addr})
	}
	l.entry().Infof(format, args...)
}

// Observer is the dashboard's timeline and history of this engine
// (adminapi.Observed).
func (e *Engine) Observer() *adminapi.Observer { return e.obs }

// HistoryWanted reports whether anything can show the history and the
// timeline: a Dashboard or Control backend, or a control socket (lbctl
// dashboard, api/history). Without any, sampling every service each
// second is work for nobody, and with thousands of services it is not
// little.
func (e *Engine) HistoryWanted() bool {
	if e.opts.ControlSockets {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.g != nil && e.g.dashboard
}

// event records ev in the timeline.
func (e *Engine) event(ev adminapi.Event) {
	if e.obs != nil {
		e.obs.Events.Add(ev)
	}
}

// events is the timeline backends record into (nil: none).
func (e *Engine) events() *adminapi.Events {
	if e.obs == nil {
		return nil
	}
	return e.obs.Events
}
