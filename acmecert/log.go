package acmecert

import (
	"strings"

	"github.com/sirupsen/logrus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger sends certmagic's zap records to lbd's logger. certmagic's
// Info is chatty (every step of an order): it becomes Debug, its
// warnings and errors stay what they are.
func zapLogger(log logrus.FieldLogger) *zap.Logger {
	return zap.New(&logrusCore{log: log})
}

type logrusCore struct {
	log    logrus.FieldLogger
	fields []zapcore.Field
}

func (c *logrusCore) Enabled(l zapcore.Level) bool { return l >= zapcore.InfoLevel }

func (c *logrusCore) With(fs []zapcore.Field) zapcore.Core {
	return &logrusCore{log: c.log, fields: append(append([]zapcore.Field(nil), c.fields...), fs...)}
}

func (c *logrusCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *logrusCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	var b strings.Builder
	b.WriteString("ACME: ")
	if e.LoggerName != "" {
		b.WriteString(e.LoggerName + ": ")
	}
	b.WriteString(e.Message)
	log := c.log.WithFields(logrus.Fields(enc.Fields))
	switch {
	case e.Level >= zapcore.ErrorLevel:
		log.Error(b.String())
	case e.Level == zapcore.WarnLevel:
		log.Warn(b.String())
	default:
		log.Debug(b.String())
	}
	return nil
}

func (c *logrusCore) Sync() error { return nil }
