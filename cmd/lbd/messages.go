package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/engine"
	"lbd/internal/msglog"
	"lbd/parser"
)

// messageStyle is the form of lbd's own messages: --message-format, else
// the configuration's MessageFormat (cfg nil: the file did not load, so
// only the flag can ask for JSON), else text.
func messageStyle(o *options, cfg *config.Config) string {
	switch {
	case o.messageFormat != "":
		return strings.ToLower(o.messageFormat)
	case cfg != nil && cfg.MessageFormat != "":
		return cfg.MessageFormat
	}
	return msglog.Text
}

// newMessageLog returns a logger of lbd's messages on w in the chosen
// style, at info level (debug with -v, as always).
func newMessageLog(o *options, cfg *config.Config, w io.Writer) *logrus.Logger {
	log := logrus.New()
	log.SetOutput(w)
	log.SetFormatter(msglog.New(messageStyle(o, cfg), o.prog))
	log.SetLevel(logrus.InfoLevel)
	if o.verbose {
		log.SetLevel(logrus.DebugLevel)
	}
	return log
}

// useEverywhere makes log the logrus standard logger's twin (same
// output, form and level): packages given no logger write there, and
// their lines must not come out in logrus's own "time=… level=…" form.
func useEverywhere(log *logrus.Logger) {
	std := logrus.StandardLogger()
	std.SetOutput(log.Out)
	std.SetFormatter(log.Formatter)
	std.SetLevel(log.GetLevel())
}

// checkMessageFormat refuses an unknown --message-format.
func checkMessageFormat(o *options) error {
	if o.messageFormat != "" && !msglog.Valid(o.messageFormat) {
		return fmt.Errorf("unknown message format %q: expected text or json", o.messageFormat)
	}
	return nil
}

// logLoadError reports a configuration that did not load, one message a
// line of err (Pound prints each diagnostic on its own line), each with
// the statement it is about.
func logLoadError(log logrus.FieldLogger, err error) {
	var diags []*parser.Diagnostic
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			d, ok := e.(*parser.Diagnostic)
			if !ok {
				diags = nil
				break
			}
			diags = append(diags, d)
		}
	}
	if diags == nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			log.WithFields(engine.ErrorFields(err)).Error(line)
		}
		return
	}
	for _, d := range diags {
		logLines(log.WithFields(engine.ErrorFields(d)), logrus.ErrorLevel, d.Error())
	}
}

// logLines logs each line of msg as a message of its own.
func logLines(e *logrus.Entry, level logrus.Level, msg string) {
	for _, line := range strings.Split(msg, "\n") {
		e.Log(level, line)
	}
}

// logWarnings reports the configuration's warnings, each with its
// statement.
func logWarnings(log logrus.FieldLogger, warns []*parser.Diagnostic) {
	for _, w := range warns {
		logLines(log.WithFields(engine.ErrorFields(w)), logrus.WarnLevel, w.Error())
	}
}
