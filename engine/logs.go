package engine

import (
	"io"
	"strconv"

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

// accessLog returns the listener's request log, nil when logging is off.
func accessLog(cfg *config.Config, l *config.Listener) *proxy.AccessLog {
	name := l.LogLevel
	if name == "" {
		name = cfg.LogLevel
	}
	f, ok := formatByName[name]
	if !ok {
		if n, err := strconv.Atoi(name); err == nil && n > 5 {
			f = proxy.LogDetailed // zproxy accepts LogLevel up to 9
		} else {
			f = proxy.LogRegular
		}
	}
	if f == proxy.LogNull {
		return nil
	}
	return &proxy.AccessLog{Format: f, Anonymise: cfg.Anonymise}
}

// attach gives every listener of g what needs the engine itself: the
// request log sink, and the Metrics and Control special backends.
func (e *Engine) attach(g *graph) {
	if e.control == nil {
		e.control = adminapi.NewPoundHandler(e)
	}
	for _, st := range g.listeners {
		st.Metrics = func(w io.Writer) error { return adminapi.WriteMetrics(w, e.State()) }
		st.MetricsType = adminapi.MetricsContentType
		st.Control = e.control
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
