package engine

import (
	"errors"
	"net"
	"strconv"

	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/internal/msglog"
	"lbd/parser"
)

// configPos is the Config source field of a statement: "file:line", ""
// when the position is unknown (a backend the control API added).
func configPos(p config.Locus) string {
	s := parser.Span(p)
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

// ErrorFields returns the source fields of err: the position of the
// first configuration statement it is about (a parser diagnostic), so a
// refused reload or start names its file and line in JSON lines too.
func ErrorFields(err error) logrus.Fields {
	var d *parser.Diagnostic
	if errors.As(err, &d) && d.Span.Start.Line > 0 {
		return logrus.Fields{msglog.Config: msglog.ConfigPos(d.Span.Start.File, d.Span.Start.Line)}
	}
	return logrus.Fields{}
}
