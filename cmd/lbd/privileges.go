package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"

	"lbd/config"
	"lbd/internal/privdrop"
)

// privileges is what User, Group and RootJail ask for, resolved at start
// (before anything is bound: a missing user stops lbd at once, as in
// Pound), and put in force once every listener, certificate, control
// socket and file the configuration names is open (dropPrivileges).
type privileges struct {
	creds     privdrop.Creds
	inherited *privdrop.Record // what the lbd this one replaced did
	// binder is the thread that kept CAP_NET_BIND_SERVICE; nil before
	// the drop, or when the process did not leave root.
	binder atomic.Pointer[privdrop.Binder]
	// exe is the binary an upgrade starts, found before the chroot:
	// /proc (os.Executable) is not in a jail.
	exe string
}

// upgradeExeEnv passes the binary's path to the new process of an
// upgrade, which cannot find its own in a jail.
const upgradeExeEnv = "LBD_UPGRADE_EXE"

// resolvePrivileges looks up the configuration's User and Group.
func resolvePrivileges(cfg *config.Config) (*privileges, error) {
	rec, err := privdrop.ParseRecord(os.Getenv(privdrop.EnvRecord))
	if err != nil {
		return nil, err
	}
	spec := privdrop.Spec{
		User: cfg.User, Group: cfg.Group, Jail: cfg.RootJail,
		UserAt: cfg.UserPos.String(), GroupAt: cfg.GroupPos.String(), JailAt: cfg.RootJailPos.String(),
	}
	p := &privileges{inherited: rec}
	if p.creds, err = privdrop.Resolve(spec, privdrop.OS, rec); err != nil {
		return nil, err
	}
	p.exe, err = os.Executable()
	if v := os.Getenv(upgradeExeEnv); err != nil && v != "" {
		p.exe, err = v, nil
	}
	if err != nil {
		// Only an upgrade needs it; it says so then.
		p.exe = ""
	}
	return p, nil
}

// jailConfigPath makes a relative configuration file absolute when lbd
// is to enter RootJail: a reload reads it from the jail's root. It runs
// before anything (the control socket) can start a reload.
func (d *daemon) jailConfigPath() error {
	if d.priv.creds.Jail == "" || filepath.IsAbs(d.o.configFile) {
		return nil
	}
	abs, err := filepath.Abs(d.o.configFile)
	if err != nil {
		return err
	}
	d.o.configFile = abs
	return nil
}

// dropPrivileges enters RootJail and becomes Group and User.
func (d *daemon) dropPrivileges() error {
	p := d.priv
	if p.creds.Jail != "" || p.creds.UID >= 0 || p.creds.GID >= 0 {
		// Like every file lbd uses, opened before it may no longer be.
		if err := d.notify.connectNotify(); err != nil {
			return err
		}
	}
	b, err := privdrop.Drop(p.creds, privdrop.Current(p.inherited))
	if err != nil {
		return err
	}
	if b != nil {
		p.binder.Store(b)
	}
	if p.creds.UID >= 0 || p.creds.Jail != "" {
		d.log.Infof("running as uid %d, gid %d%s", os.Geteuid(), os.Getegid(), jailNote(p.creds.Jail))
	}
	return nil
}

func jailNote(jail string) string {
	if jail == "" {
		return ""
	}
	return ", in the jail " + jail
}

// listen binds a listening socket where CAP_NET_BIND_SERVICE was kept
// (engine.Options.Listen).
func (p *privileges) listen(lc *net.ListenConfig, network, address string) (ln net.Listener, err error) {
	b := p.binder.Load()
	if b == nil {
		return lc.Listen(context.Background(), network, address)
	}
	b.Do(func() { ln, err = lc.Listen(context.Background(), network, address) })
	return ln, err
}

// startSuccessor starts the new binary of an upgrade. After a drop it
// starts on the thread that kept CAP_NET_BIND_SERVICE, which it inherits
// (ambient), so that it too can bind ports below 1024 at a reload.
func (p *privileges) startSuccessor(cmd *exec.Cmd) (err error) {
	if err := p.checkExe(cmd.Path); err != nil {
		return err
	}
	b := p.binder.Load()
	if b == nil {
		return cmd.Start()
	}
	b.Do(func() { err = cmd.Start() })
	return err
}

// checkExe explains why the binary cannot be started: in a jail it is
// looked for at its own path inside the jail.
func (p *privileges) checkExe(exe string) error {
	jail := p.creds.Jail
	if jail == "" {
		return nil
	}
	_, err := os.Stat(exe)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the binary %s is not in the jail: lbd runs in RootJail %s, where an upgrade starts %s; install the new binary (and the libraries it needs) at %s",
			exe, jail, exe, filepath.Join(jail, exe))
	}
	return err
}

// upgradeConfigEnv passes the configuration file's absolute path to the
// new process of an upgrade in a jail: its working directory is the
// jail's root, where a relative -f does not lead to the file.
const upgradeConfigEnv = "LBD_UPGRADE_CONFIG"

// successorEnv is what the new process of an upgrade needs to know of
// the drop (EnvRecord is in the environment already): the binary's path
// and, in a jail, the configuration file's.
func (p *privileges) successorEnv(configFile string) []string {
	env := []string{upgradeExeEnv + "=" + p.exe}
	if p.creds.Jail != "" {
		env = append(env, upgradeConfigEnv+"="+configFile)
	}
	return env
}

// privilegesChanged names the statements among User, Group and RootJail
// whose value differs in next: a reload cannot apply them.
func privilegesChanged(running, next *config.Config) []string {
	var out []string
	for _, f := range []struct{ key, a, b string }{
		{"User", running.User, next.User}, {"Group", running.Group, next.Group}, {"RootJail", running.RootJail, next.RootJail},
	} {
		if f.a != f.b {
			out = append(out, f.key)
		}
	}
	return out
}

// privilegesWarning is the reload's warning about privilegesChanged.
func privilegesWarning(changed []string) string {
	return strings.Join(changed, ", ") + " changed: lbd keeps the user, group and jail it started with until it restarts"
}
