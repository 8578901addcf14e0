package engine

import (
	"github.com/sirupsen/logrus"

	"lbd/adminapi"
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

// eventLogger passes everything to the logger it wraps and records the
// dead/resurrected messages in events.
type eventLogger struct {
	logrus.FieldLogger
	events *adminapi.Events
	name   string // the backend, as the timeline names it
}

func (l eventLogger) Warnf(format string, args ...any) {
	if format == deadFormat && len(args) == 2 {
		reason, ok := args[1].(string)
		if !ok {
			reason = "unknown reason"
		}
		l.events.Add(adminapi.Event{Kind: adminapi.EventDown, Object: l.name, Detail: reason})
	}
	l.FieldLogger.Warnf(format, args...)
}

func (l eventLogger) Infof(format string, args ...any) {
	if format == resurrectedFormat {
		l.events.Add(adminapi.Event{Kind: adminapi.EventUp, Object: l.name})
	}
	l.FieldLogger.Infof(format, args...)
}

// backendLogger is the logger of a backend named name: base (nil: the
// logrus standard logger, the backend's default) recording into events.
func backendLogger(base logrus.FieldLogger, events *adminapi.Events, name string) logrus.FieldLogger {
	if base == nil {
		base = logrus.StandardLogger()
	}
	if events == nil {
		return base
	}
	return eventLogger{FieldLogger: base, events: events, name: name}
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
