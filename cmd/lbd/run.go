package main

import (
	"fmt"
	"io"
	"log/syslog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/engine"
	"lbd/internal/msglog"
	"lbd/lua"
	"lbd/rules"
)

// Exit statuses, as Pound's: 0 success, 1 any error.
const (
	exitOK  = 0
	exitErr = 1
)

func run(o *options) int {
	if v := os.Getenv(upgradeConfigEnv); v != "" && os.Getenv(upgradeEnv) != "" {
		// The new process of an upgrade in a jail: -f may be relative
		// to a directory outside it.
		o.configFile = v
	}
	os.Unsetenv(upgradeConfigEnv)
	if err := checkMessageFormat(o); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.prog, err)
		return exitErr
	}
	restoreGC := engine.RaiseGCForBuild()
	defer restoreGC()
	lopts := loadOptions(o)
	cfg, warns, err := config.Load(o.configFile, lopts)
	// The messages of the commands below (-c, --dump-config, a failed
	// start) are lbd's own: in the configured style, on stderr.
	log := newMessageLog(o, cfg, os.Stderr)
	logWarnings(log, warns)
	if err != nil {
		logLoadError(log, err)
		return exitErr
	}
	switch {
	case o.dump:
		progs, err := rules.Listings(cfg)
		if err != nil {
			log.WithFields(engine.ErrorFields(err)).Error(err)
			return exitErr
		}
		cfg.Programs = progs
		js, err := cfg.DumpJSON()
		if err != nil {
			log.Error(err)
			return exitErr
		}
		// The dump is the command's output: a full disk or a closed
		// pipe must not pass for success.
		if _, err := os.Stdout.Write(append(js, '\n')); err != nil {
			log.Error(err)
			return exitErr
		}
		return exitOK
	case o.check:
		if err := checkLua(cfg); err != nil {
			logLoadError(log, err)
			return exitErr
		}
		if o.verbose {
			fmt.Fprintf(os.Stdout, "%s: %s dialect: %s\n", o.prog, cfg.Dialect, cfg.DialectReason)
			fmt.Fprintf(os.Stdout, "%s: Config file %s is OK\n", o.prog, o.configFile)
		}
		return exitOK
	}
	if len(cfg.Listeners) == 0 && cfg.Control == nil {
		// As pound only (config.Load refuses the file otherwise): Pound
		// 4's -c passes it, its start stops here.
		log.Error("no listeners defined")
		return exitErr
	}
	if cfg.Daemon && !o.foreground && !o.stderr && os.Getenv(daemonEnv) == "" {
		// A User or Group that does not exist fails the command, as
		// in Pound, not only the detached copy.
		if _, err := resolvePrivileges(cfg); err != nil {
			log.Error(err)
			return exitErr
		}
		return daemonize(o)
	}
	return serve(o, cfg, restoreGC)
}

// checkLua loads the Lua sources as -c must (Pound loads them to check
// that every function called exists): the global state and one
// per-thread state are enough for that.
func checkLua(cfg *config.Config) error {
	log := logrus.New()
	log.SetOutput(io.Discard)
	rt, err := lua.New(cfg, lua.Options{Threads: 1, Log: log})
	if rt != nil {
		rt.Unref()
	}
	return err
}

// loadOptions applies Pound's -W features; unknown ones are ignored, as
// Pound does.
func loadOptions(o *options) config.LoadOptions {
	// Pound 4.23 warns about deprecated statements by default; as pound,
	// lbd also stops reporting at the first error, as Pound's parser does.
	lo := config.LoadOptions{WarnDeprecated: true, FirstError: o.prog == "pound", NoLua: !lua.Available,
		AuthLog: func(msg string) { logrus.Warn(msg) }}
	switch {
	case o.control != "":
		lo.Dialect, lo.DialectWhy = config.DialectZproxy, "started with -C (zproxy's command line)"
	case o.prog == "zproxy":
		lo.Dialect, lo.DialectWhy = config.DialectZproxy, "invoked as zproxy"
	}
	for _, f := range o.features {
		switch {
		case f == "no-dns":
			lo.NoDNS = true
		case f == "dns":
			lo.NoDNS = false
		case f == "no-include-dir":
			lo.NoIncludeDir = true
		case strings.HasPrefix(f, "include-dir="):
			lo.IncludeDir = strings.TrimPrefix(f, "include-dir=")
		case f == "warn-deprecated":
			lo.WarnDeprecated = true
		case f == "no-warn-deprecated":
			lo.WarnDeprecated = false
		}
	}
	return lo
}

// setupLogging sends lbd's messages to stderr (-e or LogFacility -) or
// to syslog with the configured facility, in the style MessageFormat or
// --message-format chose; the request log goes to stdout or syslog at
// info level, in its own formats whatever that style.
func setupLogging(o *options, cfg *config.Config) (*logrus.Logger, io.Writer) {
	log := newMessageLog(o, cfg, os.Stderr)
	defer useEverywhere(log)
	if o.stderr || cfg.LogFacility == "-" {
		return log, os.Stdout
	}
	tag := o.prog
	if cfg.LogTag != "" {
		tag = cfg.LogTag
	}
	w, err := syslog.New(engine.SyslogFacility(cfg.LogFacility)|syslog.LOG_INFO, tag)
	if err != nil {
		log.Warnf("syslog unavailable (%v); logging to stderr", err)
		return log, os.Stdout
	}
	// syslog puts the tag before the message: a text line drops the
	// "prog: " prefix it would repeat.
	if t, ok := log.Formatter.(msglog.TextFormatter); ok {
		t.Prefix = ""
		log.SetFormatter(t)
	}
	log.SetOutput(w)
	// Request lines go through lbd's own datagram writer: log/syslog
	// allocates for every line.
	access, err := engine.NewSyslogWriter(cfg.LogFacility, tag)
	if err != nil {
		return log, w
	}
	return log, access
}

const daemonEnv = "LBD_DAEMONIZED"

// daemonize starts a detached copy of lbd in its own session and exits,
// as Pound's Daemon 1 does.
func daemonize(o *options) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.prog, err)
		return exitErr
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.prog, err)
		return exitErr
	}
	return exitOK
}

// serve runs the engine until a signal ends it: SIGHUP and SIGINT stop
// gracefully within Grace, SIGTERM and SIGQUIT at once (Pound); SIGUSR1
// reloads the configuration (zproxy); SIGUSR2 upgrades the binary.
func serve(o *options, cfg *config.Config, restoreGC func()) int {
	log, access := setupLogging(o, cfg)
	d := &daemon{o: o, log: log, notify: notifier{log: log}, handover: make(chan struct{}, 1)}
	inh := engine.NewInherited()
	pred, err := inheritFromPredecessor(inh)
	if err == nil {
		err = d.notify.inheritNotify()
	}
	if err == nil {
		err = systemdSockets(inh)
	}
	if err == nil {
		d.priv, err = resolvePrivileges(cfg)
	}
	if err == nil {
		err = d.jailConfigPath()
	}
	if err != nil {
		log.Errorf("%v", err)
		pred.answer(err)
		return exitErr
	}
	err = d.start(cfg, access, inh, pred)
	restoreGC()
	if err != nil {
		// One line per error (a Lua section can fail at several calls).
		logLoadError(log, err)
		pred.answer(err)
		d.notify.stopping("start failed: " + err.Error())
		return exitErr
	}
	defer d.closeCluster()
	defer d.removePIDFile()
	defer d.ctl.Close()
	// Everything the configuration names is open: now RootJail, Group
	// and User. lbd never goes on as root when they fail.
	if err := d.dropPrivileges(); err != nil {
		log.Error(err)
		pred.answer(err)
		d.notify.stopping("start failed: " + err.Error())
		d.eng.Close()
		return exitErr
	}
	d.eng.StartACME()
	if stop := startProfile(log); stop != nil {
		defer stop()
	}
	return d.run(pred)
}

func pidPath(o *options, cfg *config.Config) string {
	p := o.pidFile
	if p == "" {
		p = cfg.PIDFile
	}
	if p == "-" {
		return ""
	}
	if p != "" && !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	return p
}

// signals receives the signals lbd acts on from the start of main, so
// that one arriving while the configuration loads or the engine binds is
// handled once serving (a stop stops, a reload reloads) instead of killing
// the process with the default action, as it did before the handlers were
// installed.
var signals = make(chan os.Signal, 8)

func catchSignals() {
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	signal.Ignore(syscall.SIGPIPE)
}

// watchStartup ends the process on a stop signal that arrives before the
// engine serves (binding may wait, e.g. for a SocketFrom sender): there is
// nothing to drain yet. Any other signal, or one that arrives as startup
// ends, is put back for waitSignals. Close the returned channel when the
// engine is started.
func watchStartup(log *logrus.Logger) chan struct{} {
	started := make(chan struct{})
	go func() {
		for {
			select {
			case <-started:
				return
			case s := <-signals:
				select {
				case <-started:
					signals <- s
					return
				default:
				}
				if s == syscall.SIGUSR1 {
					log.Info("reload requested before start: the configuration was just loaded")
					continue
				}
				if s == syscall.SIGUSR2 {
					log.Warn("binary upgrade requested before start: ignored")
					continue
				}
				log.Info("shutting down...")
				os.Exit(exitOK)
			}
		}
	}()
	return started
}
