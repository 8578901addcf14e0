package engine

import (
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
	"lbd/internal/msglog"
	"lbd/parser"
)

// configPos is the Config source field of a statement: "file:line", ""
// when the position is unknown (a backend the control API added).
func configPos(p config.Locus) string {
	s := p.Span()
	if s.Start.File == "" || s.Start.Line == 0 {
		return ""
	}
	return msglog.ConfigPos(s.Start.File, s.Start.Line)
}

// listenerName names a listener in messages: its Name, else the address
// it listens on, which is what an operator finds it by in the file.
func listenerName(l *config.Listener) string {
	switch {
	case l.Name != "":
		return l.Name
	case l.SocketFrom != "":
		return l.SocketFrom
	case l.Unix || l.Port == 0:
		return l.Address
	}
	return net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
}

// listenerSource is the source of a listener's own messages (its
// certificates being reloaded or kept): its name and its statement.
func listenerSource(l *config.Listener) logrus.Fields {
	f := logrus.Fields{msglog.Listener: listenerName(l)}
	if p := configPos(l.Pos); p != "" {
		f[msglog.Config] = p
	}
	return f
}

// StatementSource is the source of the messages about a section that
// is no listener, service or backend (Cluster, Resolver): its
// configuration statement, when known.
func StatementSource(pos config.Locus) logrus.Fields {
	if p := configPos(pos); p != "" {
		return logrus.Fields{msglog.Config: p}
	}
	return logrus.Fields{}
}

// stmtError is an error about a configuration statement that is no
// parser diagnostic (a socket a listener cannot bind): its text starts
// with the position, as before, and ErrorFields finds the statement.
type stmtError struct {
	pos config.Locus
	msg string // the text after the position
	err error
}

// atStatement wraps err as "POS: msg: err" (msg may be empty).
func atStatement(pos config.Locus, msg string, err error) error {
	return &stmtError{pos: pos, msg: msg, err: err}
}

func (e *stmtError) Error() string {
	if e.msg == "" {
		return e.pos.String() + ": " + e.err.Error()
	}
	return e.pos.String() + ": " + e.msg + ": " + e.err.Error()
}

func (e *stmtError) Unwrap() error { return e.err }

// ErrorFields returns the source fields of err: the position of the
// first configuration statement it is about (a parser diagnostic, or a
// statement the engine could not apply), so a refused reload or start
// names its file and line in JSON lines too.
func ErrorFields(err error) logrus.Fields {
	var d *parser.Diagnostic
	if errors.As(err, &d) && d.Span.Start.Line > 0 {
		return logrus.Fields{msglog.Config: msglog.ConfigPos(d.Span.Start.File, d.Span.Start.Line)}
	}
	var s *stmtError
	if errors.As(err, &s) {
		if p := configPos(s.pos); p != "" {
			return logrus.Fields{msglog.Config: p}
		}
	}
	return logrus.Fields{}
}

// changeText says what a control change did, "" for a reload (the
// reload logs its own result).
func changeText(c adminapi.Change) string {
	switch c.Kind {
	case adminapi.ChangeEnabled:
		if c.Enabled {
			return "enabled"
		}
		return "disabled"
	case adminapi.ChangeBackendAdded:
		return "backend added"
	case adminapi.ChangeBackendRemoved:
		return "backend removed"
	case adminapi.ChangeLogLevel:
		return "request log format set to " + strconv.Quote(c.Level)
	case adminapi.ChangeBackendPriority:
		return "priority set to " + strconv.Itoa(c.Spec.Priority)
	case adminapi.ChangeBackendWeight:
		return "weight set to " + strconv.Itoa(c.Spec.Weight)
	case adminapi.ChangeBackendConnLimit:
		return "connection limit set to " + strconv.Itoa(c.Spec.ConnLimit)
	}
	return ""
}

// changeFields are a control change's source fields (empty names left
// out: a global service has no listener). An unnamed listener, "#N" in
// the cluster's naming, is named as every other message names it.
func (e *Engine) changeFields(c adminapi.Change) logrus.Fields {
	if n, ok := strings.CutPrefix(c.Listener, "#"); ok && e.g != nil {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(e.g.cfg.Listeners) {
			c.Listener = listenerName(e.g.cfg.Listeners[i])
		}
	}
	f := logrus.Fields{}
	for k, v := range map[string]string{msglog.Listener: c.Listener, msglog.Service: c.Service, msglog.Backend: c.Backend} {
		if v != "" {
			f[k] = v
		}
	}
	return f
}

// serviceSource names a service and its listener (none for a global
// service, scope "g"; scope "lN" is listener N) for the messages of its
// backends; an unnamed service is left out rather than numbered.
func (b *builder) serviceSource(scope string, s *config.Service) *serviceSource {
	src := &serviceSource{service: s.Name, base: b.log, events: b.opts.events}
	if i, err := strconv.Atoi(strings.TrimPrefix(scope, "l")); err == nil && i >= 0 && i < len(b.cfg.Listeners) {
		src.listener, src.inListener = b.listenerName(i), true
	}
	return src
}

// listenerName is listenerName of the build's listener i, made once for
// all its services (at 10,000 services, 10,000 copies before).
func (b *builder) listenerName(i int) string {
	if b.lnames == nil {
		b.lnames = make([]string, len(b.cfg.Listeners))
	}
	if b.lnames[i] == "" {
		b.lnames[i] = listenerName(b.cfg.Listeners[i])
	}
	return b.lnames[i]
}

// serviceSource is what a service's backends' messages say of it: kept
// as two strings shared by its backends, turned into log fields only
// when a message is written.
type serviceSource struct {
	service    string // "" = unnamed, left out
	listener   string
	inListener bool // false: a global service, no listener field
	// base is the logger the messages go to (nil: the logrus standard
	// logger, no fields), events the timeline (nil: none).
	base   logrus.FieldLogger
	events *adminapi.Events
}

func (s *serviceSource) fields() logrus.Fields {
	f := logrus.Fields{}
	if s.service != "" {
		f[msglog.Service] = s.service
	}
	if s.inListener {
		f[msglog.Listener] = s.listener
	}
	return f
}
