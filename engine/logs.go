package engine

import (
	"fmt"
	"io"
	"log/syslog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"lbd/adminapi"

	"lbd/config"
	"lbd/proxy"
)

// formatByName maps Pound 4's built-in log format names and LogLevel
// numbers to request log formats.
var formatByName = map[string]proxy.LogFormat{
	"null": proxy.LogNull, "0": proxy.LogNull,
	"regular": proxy.LogRegular, "1": proxy.LogRegular,
	"extended": proxy.LogExtended, "2": proxy.LogExtended,
	"vhost_combined": proxy.LogVhostCombined, "3": proxy.LogVhostCombined,
	"combined": proxy.LogCombined, "4": proxy.LogCombined,
	"detailed": proxy.LogDetailed, "5": proxy.LogDetailed,
}

// accessLog returns the listener's request log, nil when logging is off
// (LogLevel 0 / "null": the data path then skips logging entirely).
// LogLevel names a canned format, a number (zproxy's 6..9 print the most
// detail), or a LogFormat definition, compiled here once.
func accessLog(cfg *config.Config, l *config.Listener) *proxy.AccessLog {
	name := l.LogLevel
	if name == "" {
		name = cfg.LogLevel
	}
	al := &proxy.AccessLog{Format: proxy.LogRegular, Anonymise: cfg.Anonymise}
	if f, ok := formatByName[name]; ok {
		if f == proxy.LogNull {
			return nil
		}
		al.Format = f
		return al
	}
	if n, err := strconv.Atoi(name); err == nil && n > 5 {
		al.Format = proxy.LogDetailed
		return al
	}
	if def, ok := cfg.LogFormats[name]; ok {
		// Config validation has checked the syntax; a format Pound would
		// refuse falls back to the regular one.
		if prog, err := proxy.CompileLogFormat(name, def); prog != nil && err == nil {
			if len(def) == 0 {
				return nil
			}
			al.Prog = prog
		}
	}
	return al
}

// attach gives every listener of g what needs the engine itself: the
// request log sink, the Metrics, Control and Dashboard special backends,
// and the cluster-wide cache purge of the PURGE method.
func (e *Engine) attach(g *graph) {
	if e.control == nil {
		e.control = adminapi.NewPoundHandler(e)
		e.dash = adminapi.NewDashboard(e)
	}
	for _, st := range g.listeners {
		// Summary: the metrics count sessions, they need no copy of the tables.
		st.Metrics = func(w io.Writer) error { return adminapi.WriteStreamedMetrics(w, e) }
		st.MetricsType = adminapi.MetricsContentType
		st.Control = e.control
		st.Dashboard = e.dash
		st.PurgeCache = e.PurgeCache
	}
	e.setLogs(g)
}

// setLogs points every listener's request log at the engine's sink.
func (e *Engine) setLogs(g *graph) {
	for _, st := range g.listeners {
		if st.Log == nil {
			continue
		}
		if e.opts.AccessOut == nil {
			st.Log = nil
			continue
		}
		st.Log.Out = e.opts.AccessOut
		st.Log.Prefix = e.opts.Prefix
	}
}

// syslogWriter sends each request log line as one datagram to the local
// syslog daemon, formatted into a reused buffer under a mutex: unlike
// log/syslog it allocates nothing per line (Pound: LogFacility name).
type syslogWriter struct {
	mu   sync.Mutex
	conn net.Conn
	pri  string // "<PRI>"
	tag  string // "tag[pid]: "
	buf  []byte
}

// syslogPaths are where local syslog daemons listen.
var syslogPaths = []string{"/dev/log", "/var/run/syslog", "/var/run/log"}

// NewSyslogWriter returns a writer that logs every Write at LOG_INFO
// with the facility named (kern, user, mail, daemon, ..., local7) and
// tag, for the request log sink.
func NewSyslogWriter(facility, tag string) (io.Writer, error) {
	w := &syslogWriter{
		pri: "<" + strconv.Itoa(int(SyslogFacility(facility)|syslog.LOG_INFO)) + ">",
		tag: tag + "[" + strconv.Itoa(os.Getpid()) + "]: ",
		buf: make([]byte, 0, 1024),
	}
	if err := w.connect(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *syslogWriter) connect() error {
	var last error
	for _, p := range syslogPaths {
		for _, network := range []string{"unixgram", "unix"} {
			c, err := net.Dial(network, p)
			if err == nil {
				w.conn = c
				return nil
			}
			last = err
		}
	}
	return fmt.Errorf("syslog: %w", last)
}

// Write sends p (one line, its newline dropped) as one message.
func (w *syslogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	msg := p
	if n := len(msg); n > 0 && msg[n-1] == '\n' {
		msg = msg[:n-1]
	}
	b := append(w.buf[:0], w.pri...)
	b = time.Now().AppendFormat(b, time.Stamp)
	b = append(b, ' ')
	b = append(b, w.tag...)
	b = append(b, msg...)
	w.buf = b
	if _, err := w.conn.Write(b); err != nil {
		// The daemon restarted: reconnect once, as log/syslog does.
		w.conn.Close()
		if cerr := w.connect(); cerr != nil {
			return 0, err
		}
		if _, err := w.conn.Write(b); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// SyslogFacility maps a LogFacility name to its syslog code (daemon
// when unknown, Pound's default).
func SyslogFacility(name string) syslog.Priority {
	m := map[string]syslog.Priority{
		"kern": syslog.LOG_KERN, "user": syslog.LOG_USER, "mail": syslog.LOG_MAIL,
		"daemon": syslog.LOG_DAEMON, "auth": syslog.LOG_AUTH, "syslog": syslog.LOG_SYSLOG,
		"lpr": syslog.LOG_LPR, "news": syslog.LOG_NEWS, "uucp": syslog.LOG_UUCP,
		"cron": syslog.LOG_CRON, "authpriv": syslog.LOG_AUTHPRIV, "ftp": syslog.LOG_FTP,
		"local0": syslog.LOG_LOCAL0, "local1": syslog.LOG_LOCAL1, "local2": syslog.LOG_LOCAL2,
		"local3": syslog.LOG_LOCAL3, "local4": syslog.LOG_LOCAL4, "local5": syslog.LOG_LOCAL5,
		"local6": syslog.LOG_LOCAL6, "local7": syslog.LOG_LOCAL7,
	}
	if p, ok := m[strings.ToLower(name)]; ok {
		return p
	}
	return syslog.LOG_DAEMON
}
