package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
	"lbd/engine"
	"lbd/internal/privdrop"
)

// control is the running control sockets: the Pound 4 dialect on the
// config's Control socket and the zproxy dialect on -C.
type control struct {
	servers []*adminapi.Server
	lns     map[string]net.Listener // by socket path
	inh     *engine.Inherited
	owner   privdrop.Creds
}

// Close stops the control servers and removes their sockets.
func (c *control) Close() {
	for _, s := range c.servers {
		s.Close()
	}
}

// HandOver stops the control servers for the process that took their
// sockets over, leaving the socket files in place.
func (c *control) HandOver(ctx context.Context) {
	for _, s := range c.servers {
		if err := s.HandOver(ctx); err != nil {
			s.Close()
		}
	}
}

// sockets returns the listening control sockets by path.
func (c *control) sockets() map[string]net.Listener { return c.lns }

// startControl opens and serves the control sockets; owner is the User
// and Group a socket with ChangeOwner is given.
func startControl(o *options, cfg *config.Config, eng adminapi.Controller, inh *engine.Inherited, owner privdrop.Creds, log *logrus.Logger) (*control, error) {
	c := &control{lns: map[string]net.Listener{}, inh: inh, owner: owner}
	// zproxy serves its own API on the Control socket; when -C names the
	// same path there is one socket, in zproxy's dialect.
	same := cfg.Control != nil && o.control != "" && samePath(cfg.Control.Socket, o.control)
	if cfg.Control != nil && cfg.Control.Socket != "" && !same {
		if err := c.serve(cfg.Control, adminapi.NewPoundHandler(eng), log); err != nil {
			c.Close()
			return nil, err
		}
	}
	if o.control != "" {
		z := &config.Control{Socket: o.control, Mode: 0o600}
		if same {
			z = cfg.Control
		}
		if err := c.serve(z, adminapi.NewZproxyHandler(eng), log); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *control) serve(ctl *config.Control, h adminapiHandler, log *logrus.Logger) error {
	mode := os.FileMode(ctl.Mode)
	ln := c.inh.TakeControl(ctl.Socket)
	if ln == nil {
		var err error
		if ln, err = adminapi.Listen(ctl.Socket, mode); err != nil {
			return fmt.Errorf("control socket %s: %w", ctl.Socket, err)
		}
	} else {
		// Handed over by the lbd this one replaces; the mode follows
		// the configuration as if the socket were new.
		if mode == 0 {
			mode = 0o600
		}
		if err := ensureMode(ctl.Socket, mode.Perm()); err != nil && !c.outOfReach(err) {
			ln.Close()
			return fmt.Errorf("control socket %s: %w", ctl.Socket, err)
		}
	}
	c.lns[ctl.Socket] = ln
	if ctl.ChangeOwner {
		if err := ensureOwner(ctl.Socket, c.owner.UID, c.owner.GID); err != nil && !c.outOfReach(err) {
			ln.Close()
			return fmt.Errorf("control socket %s: %w", ctl.Socket, err)
		}
	}
	s := adminapi.NewServer(h)
	s.Logger = log
	c.servers = append(c.servers, s)
	go func() {
		// Serve returns nil once closed or handed over; anything else
		// leaves the socket unserved, which the operator must see.
		if err := s.Serve(ln); err != nil {
			log.Errorf("control socket %s: %v", ctl.Socket, err)
		}
	}()
	return nil
}

// samePath reports whether two socket paths name the same file.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	return filepath.Clean(aa) == filepath.Clean(bb)
}

// adminapiHandler is what a control socket serves.
type adminapiHandler = http.Handler

// outOfReach reports whether err says the socket file is not there for
// a process that runs in RootJail: the lbd before it made it outside
// the jail, with the mode and owner asked for, and passed the socket.
func (c *control) outOfReach(err error) bool {
	return c.owner.Jail != "" && errors.Is(err, fs.ErrNotExist)
}

// ensureMode gives path mode unless it has it: the process that takes
// the socket over at an upgrade may no longer own it (it was made
// before the privilege drop), and then may not change it even to the
// same mode.
func ensureMode(path string, mode os.FileMode) error {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == mode {
		return nil
	}
	return os.Chmod(path, mode)
}

// ensureOwner gives path to uid and gid (-1: unchanged; Pound's
// ChangeOwner with the configuration's User and Group, looked up before
// the drop), skipping what is so already, for the same reason.
func ensureOwner(path string, uid, gid int) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid == int(st.Uid) {
			uid = -1
		}
		if gid == int(st.Gid) {
			gid = -1
		}
	}
	if uid == -1 && gid == -1 {
		return nil
	}
	return os.Chown(path, uid, gid)
}
