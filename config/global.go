package config

import (
	"time"

	"strconv"
	"strings"

	"lbd/parser"
)

// Pound 4 defaults (src/config.c parse_config_file, pound.md §1.1).
const (
	defaultThreads    = 128
	defaultLineBuffer = 4096 // Pound's MAXBUF
)

func newConfig(path string) *Config {
	return &Config{
		File:           path,
		Dialect:        DialectPound,
		Daemon:         true,
		Threads:        defaultThreads,
		WorkerMin:      5,
		WorkerIdle:     Duration(30 * time.Second),
		LogFacility:    "daemon",
		LogLevel:       "regular",
		LineBufferSize: defaultLineBuffer,
		Timeouts: Timeouts{
			Alive:   Seconds(30),
			Client:  Seconds(10),
			TimeOut: Seconds(15),
			ConnTO:  Seconds(15),
			WSTime:  Seconds(600),
		},
		Grace:        Seconds(30),
		Balancer:     "random",
		HeaderOption: []string{"forwarded", "ssl"},
		Listeners:    []*Listener{},
	}
}

// builtinLogFormats are Pound's canned formats, indexed by LogLevel number.
var builtinLogFormats = []string{"null", "regular", "extended", "vhost_combined", "combined", "detailed"}

// syslogFacilities are the names LogFacility accepts.
var syslogFacilities = map[string]bool{
	"auth": true, "authpriv": true, "cron": true, "daemon": true, "ftp": true,
	"kern": true, "lpr": true, "mail": true, "news": true, "syslog": true,
	"user": true, "uucp": true, "local0": true, "local1": true, "local2": true,
	"local3": true, "local4": true, "local5": true, "local6": true, "local7": true,
}

// globalUnsupported are top-level directives lbd accepts without
// implementing them (Pound 4 extras, zproxy and fork settings).
var globalUnsupported = canonSet("SSLEngine", "DHParams",
	"ThreadModel", "Supervisor", "WorkerStackSize", "ConnectionQueueSize", "ReserveFD",
	"BackendStats",
	"Name", "HTTPTracerDir", "DynScale", "Ignore100continue",
	"ControlIP", "ControlPort")

// canonSet maps lower-cased names to their canonical spelling.
func canonSet(names ...string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[lower(n)] = n
	}
	return m
}

var globalTable = table[*Config]{}

func initGlobalTable() {
	t := globalTable
	t.add("User", "s", func(_ *builder, c *Config, _ *parser.Node, u []unit) {
		c.User, c.UserPos = u[0].arg.Text, LocusOf(u[0].arg.Span)
	})
	t.add("ECDHCurve", "s", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if b.curve(u[0].arg) {
			c.ECDHCurve = u[0].arg.Text
		}
	})
	t.add("Group", "s", func(_ *builder, c *Config, _ *parser.Node, u []unit) {
		c.Group, c.GroupPos = u[0].arg.Text, LocusOf(u[0].arg.Span)
	})
	t.add("RootJail", "s", func(_ *builder, c *Config, _ *parser.Node, u []unit) {
		c.RootJail, c.RootJailPos = u[0].arg.Text, LocusOf(u[0].arg.Span)
	})
	t.add("Daemon", "b", func(_ *builder, c *Config, _ *parser.Node, u []unit) { c.Daemon = boolArg(u[0]) })
	t.add("Threads", "n", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 1, maxInt); ok {
			c.Threads = int(n)
		}
	})
	t.add("WorkerMaxCount", "n", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 1, maxInt); ok {
			c.Threads = int(n)
		}
	})
	t.add("WorkerMinCount", "n", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 1, maxInt); ok {
			c.WorkerMin = int(n)
		}
	})
	t.add("WorkerIdleTimeout", "[nl]", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			c.WorkerIdle = d
		}
	})
	t.add("LogFacility", "[lsn]", globalLogFacility)
	t.add("LogLevel", "[sn]", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if lvl, ok := b.logLevel(u[0]); ok {
			c.LogLevel = lvl
		}
	})
	t.add("LogFormat", "[sl]s", globalLogFormat)
	t.add("MessageFormat", "[sl]", globalMessageFormat)
	t.add("LogTag", "s", func(_ *builder, c *Config, _ *parser.Node, u []unit) { c.LogTag = u[0].arg.Text })
	t.add("Alive", "[nl]", durationSetter(func(c *Config) *Duration { return &c.Timeouts.Alive }))
	t.add("Client", "[nl]", durationSetter(func(c *Config) *Duration { return &c.Timeouts.Client }))
	t.add("TimeOut", "[nl]", durationSetter(func(c *Config) *Duration { return &c.Timeouts.TimeOut }))
	t.add("ConnTO", "[nl]", durationSetter(func(c *Config) *Duration { return &c.Timeouts.ConnTO }))
	t.add("WSTimeOut", "[nl]", durationSetter(func(c *Config) *Duration { return &c.Timeouts.WSTime }))
	t.add("Grace", "[nl]", durationSetter(func(c *Config) *Duration { return &c.Grace }))
	t.add("IgnoreCase", "b", func(_ *builder, c *Config, _ *parser.Node, u []unit) { c.IgnoreCase = boolArg(u[0]) }).
		deprecated("use the -icase matching directive flag to request case-insensitive comparison")
	t.add("Anonymise", "b?", func(_ *builder, c *Config, _ *parser.Node, u []unit) { c.Anonymise = len(u) == 0 || boolArg(u[0]) })
	t.alias("Anonymize", "Anonymise", "")
	t.add("PIDFile", "s", func(_ *builder, c *Config, _ *parser.Node, u []unit) { c.PIDFile = u[0].arg.Text })
	t.add("Balancer", "[sl]", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if v, ok := b.balancer(u[0].arg); ok {
			c.Balancer = v
		}
	})
	t.add("HeaderOption", "[sl]+", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		c.HeaderOption = b.headerOptions(c.HeaderOption, u)
	})
	t.add("LineBufferSize", "[nl]", func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if n, ok := b.sizeArg(u[0].arg, maxInt); ok {
			c.LineBufferSize = int(n)
		}
	})
	t.add("IncludeDir", ".*", globalIncludeDir)
	t.add("Control", "s?", globalControl).either()
	t.add("ListenHTTP", "s?", func(b *builder, c *Config, n *parser.Node, u []unit) { b.listener(n, u, false) }).block()
	t.add("ListenHTTPS", "s?", func(b *builder, c *Config, n *parser.Node, u []unit) { b.listener(n, u, true) }).block()
	t.add("Service", "s?", func(b *builder, c *Config, n *parser.Node, u []unit) {
		c.Services = b.service(n, u, c.Services)
	}).block()
	t.add("Tunnel", "s?", func(b *builder, _ *Config, n *parser.Node, u []unit) { b.tunnel(n, u) }).block()
	t.add("Backend", "s", globalBackend).block()
	t.add("Resolver", "", globalResolver).block()
	t.add("Cluster", "", globalCluster).block()
	t.add("ACMEAccount", "", globalACME).block()
	t.add("Lua", "", globalLua).block()
}

// durationSetter builds a handler storing a duration argument.
func durationSetter(field func(*Config) *Duration) func(*builder, *Config, *parser.Node, []unit) {
	return func(b *builder, c *Config, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			*field(c) = d
		}
	}
}

func globalLogFacility(b *builder, c *Config, _ *parser.Node, u []unit) {
	a := u[0].arg
	name := strings.ToLower(a.Text)
	switch {
	case a.Kind == parser.Number:
		if _, ok := b.intArg(a, 0, maxInt); !ok {
			return
		}
	case name != "-" && !syslogFacilities[name]:
		b.errorf(a.Span, "unknown log facility name")
		return
	}
	c.LogFacility = name
}

// globalMessageFormat reads MessageFormat text|json. Its values are
// msglog's styles; config does not import msglog (it would pull logrus
// into every user of the parser), so the list is kept here too.
func globalMessageFormat(b *builder, c *Config, _ *parser.Node, u []unit) {
	a := u[0].arg
	v := strings.ToLower(a.Text)
	if v != "text" && v != "json" {
		b.errorf(a.Span, "unknown message format %q: expected text or json", a.Text)
		return
	}
	c.MessageFormat = v
}

// logLevel converts a LogLevel argument: a number (Pound 0..5, zproxy
// 0..9) or the name of a built-in or previously defined format.
func (b *builder) logLevel(u unit) (string, bool) {
	a := u.arg
	if a.Kind == parser.String {
		for _, f := range builtinLogFormats {
			if a.Text == f {
				return f, true
			}
		}
		if _, ok := b.cfg.LogFormats[a.Text]; ok {
			return a.Text, true
		}
		b.errorf(a.Span, "undefined format")
		return "", false
	}
	max := uint64(len(builtinLogFormats) - 1)
	if b.cfg.Dialect == DialectZproxy {
		max = 9
	}
	n, err := strconv.ParseUint(a.Text, 10, 32)
	if err != nil || n > max {
		b.errorf(a.Span, "undefined log level")
		return "", false
	}
	return builtinLogFormats[min(n, uint64(len(builtinLogFormats)-1))], true
}

func globalLogFormat(b *builder, c *Config, _ *parser.Node, u []unit) {
	name, format := u[0].arg.Text, u[1].arg.Text
	if !validLogFormat(format) {
		b.errorf(u[1].arg.Span, "invalid log format")
		return
	}
	if c.LogFormats == nil {
		c.LogFormats = map[string]string{}
	}
	c.LogFormats[name] = format
}

// validLogFormat does a light syntax check: every % is followed by a
// conversion letter, optionally preceded by > or a {argument}.
func validLogFormat(f string) bool {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		if i < len(f) && f[i] == '>' {
			i++
		}
		if i < len(f) && f[i] == '{' {
			end := strings.IndexByte(f[i:], '}')
			if end < 0 {
				return false
			}
			i += end + 1
		}
		if i >= len(f) || !(f[i] >= 'a' && f[i] <= 'z' || f[i] >= 'A' && f[i] <= 'Z') {
			return false
		}
	}
	return true
}

// balancer validates a Balancer value (case-insensitive, as Pound).
func (b *builder) balancer(a parser.Arg) (string, bool) {
	v := strings.ToLower(a.Text)
	if v != "random" && v != "iwrr" {
		b.errorf(a.Span, "unsupported balancing strategy")
		return "", false
	}
	return v, true
}

// headerOptions applies HeaderOption words to the enabled set cur:
// forwarded, ssl, all, none, and no-X to remove X.
func (b *builder) headerOptions(cur []string, u []unit) []string {
	fwd, ssl := contains(cur, "forwarded"), contains(cur, "ssl")
	for _, x := range u {
		w := strings.ToLower(x.arg.Text)
		on := !strings.HasPrefix(w, "no-")
		w = strings.TrimPrefix(w, "no-")
		switch {
		case w == "none" && on:
			fwd, ssl = false, false
		case w == "forwarded":
			fwd = on
		case w == "ssl":
			ssl = on
		case w == "all":
			fwd, ssl = on, on
		default:
			b.errorf(x.arg.Span, "unknown option")
		}
	}
	out := []string{}
	if fwd {
		out = append(out, "forwarded")
	}
	if ssl {
		out = append(out, "ssl")
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// globalIncludeDir follows IncludeDir so later relative file names
// resolve where the parser resolved later Includes; the parser has already
// reported a bad IncludeDir, so this stays silent.
func globalIncludeDir(b *builder, _ *Config, _ *parser.Node, u []unit) {
	if len(u) != 1 || u[0].code != 's' {
		return
	}
	dir := b.resolve(u[0].arg.Text)
	if st, err := b.fs.Stat(dir); err == nil && st.IsDir() {
		b.incDir = dir
	}
}

var controlTable = table[*Control]{}

func initControlTable() {
	t := controlTable
	t.add("Socket", "s", func(_ *builder, c *Control, _ *parser.Node, u []unit) { c.Socket = u[0].arg.Text })
	t.add("ChangeOwner", "b", func(_ *builder, c *Control, _ *parser.Node, u []unit) { c.ChangeOwner = boolArg(u[0]) })
	t.add("Mode", "n", func(b *builder, c *Control, _ *parser.Node, u []unit) {
		// Written in octal (Mode 660), as in chmod, whatever its leading digit.
		m, err := strconv.ParseUint(u[0].arg.Text, 8, 32)
		if err != nil || m > 0o777 {
			b.errorf(u[0].arg.Span, "invalid file mode")
			return
		}
		c.Mode = uint32(m)
	})
}

// globalControl handles `Control "path"` and the Control ... End block.
func globalControl(b *builder, c *Config, n *parser.Node, u []unit) {
	if c.Control != nil {
		b.errorf(stmtSpan(n), "Control redefined")
		b.followf(c.Control.Pos.Span(), "original definition was here")
		return
	}
	ctl := &Control{Pos: LocusOf(stmtSpan(n)), Mode: 0o600}
	switch {
	case n.Block && len(u) > 0:
		b.errorf(u[0].arg.Span, "extra arguments")
		return
	case n.Block:
		walk(b, controlTable, nil, ctl, n.Children)
		if ctl.Socket == "" {
			b.errorf(stmtSpan(n), "Control section has no Socket")
			return
		}
	case len(u) == 0:
		b.errorf(stmtSpan(n), "not enough arguments")
		return
	default:
		ctl.Socket = u[0].arg.Text
	}
	c.Control = ctl
}
