package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"

	"lbd/acmecert"
	"lbd/adminapi"
	"lbd/cluster"
	"lbd/config"
	"lbd/engine"
	"lbd/handoff"
	"lbd/resolver"
)

// daemon is a serving lbd: the engine, its control sockets, and what
// systemd and a binary upgrade need.
type daemon struct {
	o       *options
	log     *logrus.Logger
	priv    *privileges
	eng     *engine.Engine
	node    *cluster.Node // nil without a Cluster section
	ctl     *control
	notify  notifier
	pidFile string
	pidDir  *os.File // the PID file's directory in a jail; nil: use the path
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
	atStart := startOnly(cfg)
	eopts := engine.Options{
		Log: log, AccessOut: access, Prefix: prefix,
		Load: func() (*config.Config, error) { return reloadConfig(o, atStart, log) },
		// Pound's test suite reaches its DNS server through an
		// LD_PRELOAD library, which a Go binary bypasses: lbd honours
		// the same variables instead.
		DNSRewrite: resolver.FakeDNS(os.Getenv),
		Inherit:    inh,
		Restore:    restore,
		Listen:     d.priv.listen,
		// Orders and renewals write the ACME storage: they start once
		// lbd is the User it drops to (run.go), who owns the directory.
		DeferACME: true,
		// The control sockets serve the dashboard too (lbctl
		// dashboard), so its history and timeline are kept.
		ControlSockets: (cfg.Control != nil && cfg.Control.Socket != "") || o.control != "",
	}
	if c := d.priv.creds; c.UID >= 0 || c.GID >= 0 {
		eopts.ACMEOwner = &acmecert.Owner{UID: c.UID, GID: c.GID}
	}
	if cfg.Cluster != nil {
		node, err := cluster.New(cfg.Cluster, log.WithFields(engine.StatementSource(cfg.Cluster.Pos)))
		if err != nil {
			return err
		}
		d.node, eopts.Cluster = node, node
	}
	eng, err := engine.New(cfg, eopts)
	if err != nil {
		return err
	}
	log.Info("starting...")
	started := watchStartup(log)
	if d.node != nil {
		// The cluster's state and sessions before the first request.
		d.node.Start(eng)
	}
	err = eng.Start()
	close(started)
	if err != nil {
		d.closeCluster()
		return err
	}
	if d.node != nil {
		d.node.Started()
	}
	d.eng = eng
	if d.ctl, err = startControl(o, cfg, front{eng, d}, inh, d.priv.creds, log); err != nil {
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
		if err := d.writePIDFile(); err != nil {
			log.Warnf("can't write PID file %s: %v", d.pidFile, err)
		}
	}
	go engine.ReturnBuildGarbage()
	return nil
}

// writePIDFile writes the PID file, in its directory kept open in a
// jail (pidfile.go).
func (d *daemon) writePIDFile() error {
	var err error
	if d.pidDir, err = pidDirFor(d.pidFile, d.priv.creds.Jail); err != nil {
		return err
	}
	if d.pidDir != nil {
		return writePIDFileAt(d.pidDir, d.pidFile)
	}
	return writePIDFile(d.pidFile)
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
		os.Remove(tmp) // best effort: the rename's error is the one to report
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

// closeCluster leaves the cluster (nothing without one).
func (d *daemon) closeCluster() {
	if d.node != nil {
		d.node.Close()
	}
}

// reloadConfig re-reads the configuration file for a reload (from
// inside RootJail, as User). The Cluster section, User, Group and
// RootJail are read at start only: a change is reported and waits for a
// restart.
func reloadConfig(o *options, running *config.Config, log *logrus.Logger) (*config.Config, error) {
	cfg, _, err := config.Load(o.configFile, loadOptions(o))
	if err != nil {
		return nil, err
	}
	if !sameCluster(running.Cluster, cfg.Cluster) {
		log.Warn("the Cluster section changed: it takes effect when lbd restarts")
	}
	if changed := privilegesChanged(running, cfg); len(changed) > 0 {
		log.Warn(privilegesWarning(changed))
	}
	return cfg, nil
}

// startOnly keeps of cfg what reloadConfig compares a reload with: the
// settings read at start only. The Load closure lives as long as lbd;
// holding the whole start configuration kept it (22 MB at 10,000
// services) after the first reload had replaced it.
func startOnly(cfg *config.Config) *config.Config {
	return &config.Config{Cluster: cfg.Cluster, User: cfg.User, Group: cfg.Group, RootJail: cfg.RootJail}
}

// sameCluster compares two Cluster sections, positions aside.
func sameCluster(a, b *config.Cluster) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Pos, y.Pos = config.Locus{}, config.Locus{}
	return reflect.DeepEqual(x, y)
}

// removePIDFile removes the PID file unless a successor wrote its own.
func (d *daemon) removePIDFile() {
	if d.pidFile == "" {
		return
	}
	if d.pidDir != nil {
		if err := removePIDFileAt(d.pidDir, d.pidFile); err != nil {
			d.log.Warnf("can't remove PID file %s: %v", d.pidFile, err)
		}
		return
	}
	b, err := os.ReadFile(d.pidFile)
	if err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		if err := os.Remove(d.pidFile); err != nil {
			d.log.Warnf("can't remove PID file %s: %v", d.pidFile, err)
		}
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
		d.notify.ready(d.notify.statusLine(d.eng))
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
			_ = d.reload() // the engine logged a failure, systemd has the status
		case syscall.SIGUSR2:
			// startUpgrade logged a failure (a signal during an upgrade
			// changes nothing); this process goes on.
			if _, err := d.startUpgrade(); err == nil {
				return d.handOver()
			}
		case syscall.SIGHUP, syscall.SIGINT:
			d.log.Info("shutting down...")
			d.notify.stopping("draining connections")
			grace := time.Duration(d.eng.Config().Grace)
			ctx, cancel := context.WithTimeout(ctx, grace)
			if err := d.eng.Shutdown(ctx); err != nil {
				d.log.Infof("grace period of %s over: closing the remaining connections", grace)
			}
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
		d.notify.ready(d.notify.statusLine(d.eng) + "; reload failed: " + err.Error())
		return err
	}
	d.notify.ready(d.notify.statusLine(d.eng))
	return nil
}

// front is the engine as the control API sees it, with the daemon's
// reload (which tells systemd) and binary upgrade.
type front struct {
	*engine.Engine
	d *daemon
}

// The control API streams listings and samples from what it is given.
var _ adminapi.SummaryStreamer = front{}

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
