package main

import (
	"fmt"
	"net/http"
	"os"
	"os/user"
	"strconv"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
	"lbd/engine"
)

// control is the running control sockets: the Pound 4 dialect on the
// config's Control socket and the zproxy dialect on -C.
type control struct{ servers []*adminapi.Server }

// Close stops the control servers and removes their sockets.
func (c *control) Close() {
	for _, s := range c.servers {
		s.Close()
	}
}

func startControl(o *options, cfg *config.Config, eng *engine.Engine, log *logrus.Logger) (*control, error) {
	c := &control{}
	if cfg.Control != nil && cfg.Control.Socket != "" {
		if err := c.serve(cfg.Control, adminapi.NewPoundHandler(eng), cfg, log); err != nil {
			c.Close()
			return nil, err
		}
	}
	if o.control != "" {
		z := &config.Control{Socket: o.control, Mode: 0o600}
		if err := c.serve(z, adminapi.NewZproxyHandler(eng), cfg, log); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *control) serve(ctl *config.Control, h adminapiHandler, cfg *config.Config, log *logrus.Logger) error {
	mode := os.FileMode(ctl.Mode)
	ln, err := adminapi.Listen(ctl.Socket, mode)
	if err != nil {
		return fmt.Errorf("control socket %s: %w", ctl.Socket, err)
	}
	if ctl.ChangeOwner {
		if err := chownToConfig(ctl.Socket, cfg); err != nil {
			ln.Close()
			return err
		}
	}
	s := adminapi.NewServer(h)
	s.Logger = log
	c.servers = append(c.servers, s)
	go s.Serve(ln)
	return nil
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
		uid, _ = strconv.Atoi(u.Uid)
	}
	if cfg.Group != "" {
		g, err := user.LookupGroup(cfg.Group)
		if err != nil {
			return fmt.Errorf("control socket group: %w", err)
		}
		gid, _ = strconv.Atoi(g.Gid)
	}
	return os.Chown(path, uid, gid)
}
