package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	sd "github.com/coreos/go-systemd/v22/daemon"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"lbd/engine"
)

// notifier speaks systemd's notify protocol (sd_notify(3)) on
// $NOTIFY_SOCKET; without it every call does nothing.
type notifier struct {
	log *logrus.Logger
	// conn, when set, is $NOTIFY_SOCKET opened before RootJail hid its
	// path (notifyconn.go).
	conn *net.UnixConn
}

// send sends one notification of newline-separated assignments. A
// failure is logged once per message: it never stops lbd.
func (n notifier) send(lines ...string) {
	msg := strings.Join(lines, "\n")
	var err error
	if n.conn != nil {
		_, err = n.conn.Write([]byte(msg))
	} else {
		_, err = sd.SdNotify(false, msg)
	}
	if err != nil {
		n.log.Warnf("systemd notify: %v", err)
	}
}

// ready says every listener is bound and the first health round done.
func (n notifier) ready(status string) { n.send(sd.SdNotifyReady, "STATUS="+status) }

// reloading starts a reload; ready must follow when it is over.
func (n notifier) reloading(status string) {
	n.send(sd.SdNotifyReloading, "MONOTONIC_USEC="+strconv.FormatInt(monotonicUsec(), 10), "STATUS="+status)
}

// stopping says lbd is shutting down.
func (n notifier) stopping(status string) { n.send(sd.SdNotifyStopping, "STATUS="+status) }

// mainPID tells systemd another process is the service now (after a
// binary upgrade).
func (n notifier) mainPID(pid int, status string) {
	n.send("MAINPID="+strconv.Itoa(pid), "STATUS="+status)
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, which RELOADING=1
// carries so systemd can order the reload against its own jobs.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0 // cannot fail on Linux; systemd ignores a 0
	}
	return ts.Nano() / 1000
}

// watchdog sends WATCHDOG=1 at half the interval systemd asked for
// (WatchdogSec=, passed as $WATCHDOG_USEC), as long as the engine's lock
// can be taken: a wedged engine stops the pings and systemd restarts it.
// It returns when ctx ends, at once if there is no watchdog.
func (n notifier) watchdog(ctx context.Context, eng *engine.Engine) error {
	interval, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		n.log.Warnf("systemd watchdog: %v", err)
		return nil
	}
	if interval <= 0 {
		return nil
	}
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	for {
		if eng.Responsive(interval / 4) {
			n.send(sd.SdNotifyWatchdog)
		} else {
			n.log.Errorf("engine unresponsive: watchdog ping withheld")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// systemdSockets takes the sockets systemd passed (LISTEN_FDS,
// LISTEN_PID, LISTEN_FDNAMES) and clears those variables so that no
// child (a binary upgrade) mistakes them for its own.
func systemdSockets(in *engine.Inherited) error {
	for _, f := range activation.Files(true) {
		name := f.Name()
		if strings.HasPrefix(name, "LISTEN_FD_") {
			name = "" // systemd gave no name
		}
		if err := in.AddFile(f, name, "", "systemd"); err != nil {
			return err
		}
	}
	return nil
}

// statusLine is the STATUS= text of a serving lbd, "" when nothing
// listens: counting reads the state of every backend (at 20,000 backends
// a 30 MB snapshot, just when the configuration's build garbage is
// being returned).
func (n notifier) statusLine(eng *engine.Engine) string {
	if n.conn == nil && os.Getenv("NOTIFY_SOCKET") == "" {
		return ""
	}
	st := eng.Summary()
	backends, alive := 0, 0
	for _, l := range st.Listeners {
		for _, s := range l.Services {
			for _, b := range s.Backends {
				backends++
				if b.Alive && b.Enabled {
					alive++
				}
			}
		}
	}
	for _, s := range st.Services {
		for _, b := range s.Backends {
			backends++
			if b.Alive && b.Enabled {
				alive++
			}
		}
	}
	return fmt.Sprintf("serving %d listeners, %d of %d backends up (pid %d)", len(st.Listeners), alive, backends, os.Getpid())
}
