package main

import (
	"context"
	"fmt"
	"io"
	"log/syslog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"

	"lbd/adminapi"
	"lbd/config"
	"lbd/engine"
	"lbd/handoff"
	"lbd/resolver"
	"lbd/rules"
)

// Exit statuses, as Pound's: 0 success, 1 any error.
const (
	exitOK  = 0
	exitErr = 1
)

func run(o *options) int {
	lopts := loadOptions(o)
	cfg, warns, err := config.Load(o.configFile, lopts)
	for _, w := range warns {
		fmt.Fprintf(os.Stderr, "%s: %s\n", o.prog, w.Error())
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(os.Stderr, "%s: %s\n", o.prog, line)
		}
		return exitErr
	}
	switch {
	case o.dump:
		progs, err := rules.Listings(cfg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", o.prog, err)
			return exitErr
		}
		cfg.Programs = progs
		js, err := cfg.DumpJSON()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", o.prog, err)
			return exitErr
		}
		os.Stdout.Write(append(js, '\n'))
		return exitOK
	case o.check:
		if o.verbose {
			fmt.Fprintf(os.Stdout, "%s: %s dialect: %s\n", o.prog, cfg.Dialect, cfg.DialectReason)
			fmt.Fprintf(os.Stdout, "%s: Config file %s is OK\n", o.prog, o.configFile)
		}
		return exitOK
	}
	if cfg.Daemon && !o.foreground && !o.stderr && os.Getenv(daemonEnv) == "" {
		return daemonize(o)
	}
	return serve(o, cfg)
}

// loadOptions applies Pound's -W features; unknown ones are ignored, as
// Pound does.
func loadOptions(o *options) config.LoadOptions {
	// Pound 4.23 warns about deprecated statements by default; as pound,
	// lbd also stops reporting at the first error, as Pound's parser does.
	lo := config.LoadOptions{WarnDeprecated: true, FirstError: o.prog == "pound"}
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

// prefixFormatter prints "prog: message", Pound's stderr log form.
type prefixFormatter struct{ prog string }

func (f prefixFormatter) Format(e *logrus.Entry) ([]byte, error) {
	b := append([]byte(f.prog+": "), e.Message...)
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = fmt.Appendf(b, " %s=%v", k, e.Data[k])
	}
	return append(b, '\n'), nil
}

// setupLogging sends daemon messages to stderr (-e or LogFacility -) or
// to syslog with the configured facility; the request log goes to stdout
// or syslog at info level.
func setupLogging(o *options, cfg *config.Config) (*logrus.Logger, io.Writer) {
	log := logrus.New()
	log.SetFormatter(prefixFormatter{o.prog})
	log.SetLevel(logrus.InfoLevel)
	if o.verbose {
		log.SetLevel(logrus.DebugLevel)
	}
	if o.stderr || cfg.LogFacility == "-" {
		log.SetOutput(os.Stderr)
		return log, os.Stdout
	}
	tag := o.prog
	if cfg.LogTag != "" {
		tag = cfg.LogTag
	}
	w, err := syslog.New(engine.SyslogFacility(cfg.LogFacility)|syslog.LOG_INFO, tag)
	if err != nil {
		log.SetOutput(os.Stderr)
		log.Warnf("syslog unavailable (%v); logging to stderr", err)
		return log, os.Stdout
	}
	log.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
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
func serve(o *options, cfg *config.Config) int {
	log, access := setupLogging(o, cfg)
	d := &daemon{o: o, log: log, notify: notifier{log: log}, handover: make(chan struct{}, 1)}
	inh := engine.NewInherited()
	pred, err := inheritFromPredecessor(inh)
	if err == nil {
		err = systemdSockets(inh)
	}
	if err != nil {
		log.Errorf("%v", err)
		pred.answer(err)
		return exitErr
	}
	if err := d.start(cfg, access, inh, pred); err != nil {
		log.Errorf("%v", err)
		pred.answer(err)
		d.notify.stopping("start failed: " + err.Error())
		return exitErr
	}
	defer d.removePIDFile()
	defer d.ctl.Close()
	if stop := startProfile(log); stop != nil {
		defer stop()
	}
	return d.run(pred)
}

// daemon is a serving lbd: the engine, its control sockets, and what
// systemd and a binary upgrade need.
type daemon struct {
	o       *options
	log     *logrus.Logger
	eng     *engine.Engine
	ctl     *control
	notify  notifier
	pidFile string
	// upgrading is set while an upgrade runs and for good once one
	// succeeded; handover then tells the main loop to drain.
	upgrading atomic.Bool
	handover  chan struct{}
}

// start builds the engine on the inherited and new sockets, restores a
// predecessor's state, and opens the control sockets and the PID file.
func (d *daemon) start(cfg *config.Config, access io.Writer, inh *engine.Inherited, pred *predecessor) error {
	o, log := d.o, d.log
	prefix := ""
	if access == os.Stdout {
		prefix = o.prog + ": "
	}
	var restore *handoff.State
	if pred != nil {
		restore = pred.state
		var skipped []string
		cfg, skipped = engine.ApplyRuntime(cfg, restore)
		for _, msg := range skipped {
			log.Warnf("handoff: %s", msg)
		}
	}
	engine.Version = apiVersion(o.prog)
	eng, err := engine.New(cfg, engine.Options{
		Log: log, AccessOut: access, Prefix: prefix,
		Load: func() (*config.Config, error) {
			c, _, err := config.Load(o.configFile, loadOptions(o))
			return c, err
		},
		// Pound's test suite reaches its DNS server through an
		// LD_PRELOAD library, which a Go binary bypasses: lbd honours
		// the same variables instead.
		DNSRewrite: resolver.FakeDNS(os.Getenv),
		Inherit:    inh,
		Restore:    restore,
	})
	if err != nil {
		return err
	}
	log.Info("starting...")
	started := watchStartup(log)
	err = eng.Start()
	close(started)
	if err != nil {
		return err
	}
	d.eng = eng
	if d.ctl, err = startControl(o, cfg, front{eng, d}, inh, log); err != nil {
		eng.Close()
		return err
	}
	if err := unusedSockets(inh, log); err != nil {
		d.ctl.Close()
		eng.Close()
		return err
	}
	d.pidFile = pidPath(o, cfg)
	if d.pidFile != "" {
		if err := writePIDFile(d.pidFile); err != nil {
			log.Warnf("can't write PID file %s: %v", d.pidFile, err)
		}
	}
	return nil
}

// writePIDFile replaces the PID file in one step (a new file renamed
// over it), so that at a binary upgrade a reader sees the old pid or the
// new one, never an empty file.
func writePIDFile(path string) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// unusedSockets refuses a socket systemd passed that no listener took:
// systemd keeps it open, so its clients would wait for an accept that
// never comes. One handed over by an upgrade whose listener the new
// configuration dropped is simply closed.
func unusedSockets(inh *engine.Inherited, log *logrus.Logger) error {
	var errs []string
	for _, msg := range inh.Unused() {
		if strings.HasPrefix(msg, "systemd ") {
			errs = append(errs, msg)
			continue
		}
		log.Infof("%s: closed", msg)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s; add a listener for it or remove it from the socket unit", strings.Join(errs, "; "))
	}
	return nil
}

// removePIDFile removes the PID file unless a successor wrote its own.
func (d *daemon) removePIDFile() {
	if d.pidFile == "" {
		return
	}
	b, err := os.ReadFile(d.pidFile)
	if err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		os.Remove(d.pidFile)
	}
}

// run reports readiness (to systemd and to a predecessor), pings the
// watchdog and handles signals until lbd stops; the three run in one
// errgroup and end together.
func (d *daemon) run(pred *predecessor) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	code := exitOK
	g.Go(func() error {
		defer cancel()
		code = d.waitSignals(ctx)
		return nil
	})
	g.Go(func() error {
		select {
		case <-d.eng.Ready():
		case <-ctx.Done():
			return nil
		}
		pred.answer(nil)
		d.log.Debug("ready")
		d.notify.ready(statusLine(d.eng))
		return nil
	})
	g.Go(func() error { return d.notify.watchdog(ctx, d.eng) })
	if err := g.Wait(); err != nil {
		d.log.Errorf("%v", err)
		return exitErr
	}
	return code
}

func (d *daemon) waitSignals(ctx context.Context) int {
	for {
		var s os.Signal
		select {
		case s = <-signals:
		case <-d.handover:
			return d.handOver()
		}
		switch s {
		case syscall.SIGUSR1:
			d.reload()
		case syscall.SIGUSR2:
			if _, err := d.startUpgrade(); err == nil {
				return d.handOver()
			}
		case syscall.SIGHUP, syscall.SIGINT:
			d.log.Info("shutting down...")
			d.notify.stopping("draining connections")
			grace := time.Duration(d.eng.Config().Grace)
			ctx, cancel := context.WithTimeout(ctx, grace)
			d.eng.Shutdown(ctx)
			cancel()
			return exitOK
		default:
			d.log.Info("shutting down...")
			d.notify.stopping("stopping")
			d.eng.Close()
			return exitOK
		}
	}
}

// handOver drains after a successful upgrade: the control sockets and
// the listeners are the new process's now.
func (d *daemon) handOver() int {
	grace := time.Duration(d.eng.Config().Grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	d.ctl.HandOver(ctx)
	if err := d.eng.Handover(ctx); err != nil {
		d.log.Warnf("handover: connections still open after Grace were closed: %v", err)
	}
	d.log.Info("handed over; exiting")
	return exitOK
}

// reload re-reads the configuration file (SIGUSR1, PATCH /config); on
// error nothing changes. systemd sees RELOADING=1 and then READY=1
// either way.
func (d *daemon) reload() error {
	d.notify.reloading("reloading the configuration")
	err := d.eng.Reload()
	if err != nil {
		d.notify.ready(statusLine(d.eng) + "; reload failed: " + err.Error())
		return err
	}
	d.notify.ready(statusLine(d.eng))
	return nil
}

// front is the engine as the control API sees it, with the daemon's
// reload (which tells systemd) and binary upgrade.
type front struct {
	*engine.Engine
	d *daemon
}

// Reload is PATCH /config.
func (f front) Reload() error { return f.d.reload() }

// Upgrade is PATCH /upgrade (lbctl upgrade).
func (f front) Upgrade() (adminapi.UpgradeResult, error) { return f.d.startUpgrade() }

// HandOver starts the drain once the upgrade's reply is sent.
func (f front) HandOver() {
	select {
	case f.d.handover <- struct{}{}:
	default: // already asked
	}
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
