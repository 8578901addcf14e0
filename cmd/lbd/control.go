package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
	"lbd/engine"
)

// control is the running control sockets: the Pound 4 dialect on the
// config's Control socket and the zproxy dialect on -C.
type control struct {
	servers []*adminapi.Server
	lns     map[string]net.Listener // by socket path
	inh     *engine.Inherited
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

func startControl(o *options, cfg *config.Config, eng adminapi.Controller, inh *engine.Inherited, log *logrus.Logger) (*control, error) {
	c := &control{lns: map[string]net.Listener{}, inh: inh}
	// zproxy serves its own API on the Control socket; when -C names the
	// same path there is one socket, in zproxy's dialect.
	same := cfg.Control != nil && o.control != "" && samePath(cfg.Control.Socket, o.control)
	if cfg.Control != nil && cfg.Control.Socket != "" && !same {
		if err := c.serve(cfg.Control, adminapi.NewPoundHandler(eng), cfg, log); err != nil {
			c.Close()
			return nil, err
		}
	}
	if o.control != "" {
		z := &config.Control{Socket: o.control, Mode: 0o600}
		if same {
			z = cfg.Control
		}
		if err := c.serve(z, adminapi.NewZproxyHandler(eng), cfg, log); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *control) serve(ctl *config.Control, h adminapiHandler, cfg *config.Config, log *logrus.Logger) error {
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
		if err := os.Chmod(ctl.Socket, mode.Perm()); err != nil {
			ln.Close()
			return fmt.Errorf("control socket %s: %w", ctl.Socket, err)
		}
	}
	c.lns[ctl.Socket] = ln
	if ctl.ChangeOwner {
		if err := chownToConfig(ctl.Socket, cfg); err != nil {
			ln.Close()
			return err
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

// chownToConfig gives the control socket to the configured User and Group
// (Pound's ChangeOwner).
func chownToConfig(path string, cfg *config.Config) error {
	uid, gid := -1, -1
	if cfg.User != "" {
		u, err := user.Lookup(cfg.User)
		if err != nil {
			return fmt.Errorf("control socket owner: %w", err)
		}
		if uid, err = strconv.Atoi(u.Uid); err != nil {
			return fmt.Errorf("control socket owner %s: uid %q: %w", cfg.User, u.Uid, err)
		}
	}
	if cfg.Group != "" {
		g, err := user.LookupGroup(cfg.Group)
		if err != nil {
			return fmt.Errorf("control socket group: %w", err)
		}
		if gid, err = strconv.Atoi(g.Gid); err != nil {
			return fmt.Errorf("control socket group %s: gid %q: %w", cfg.Group, g.Gid, err)
		}
	}
	return os.Chown(path, uid, gid)
}
