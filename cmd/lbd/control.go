package main

import (
	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/engine"
)

// control is the running control sockets (Pound dialect on the config's
// Control socket, zproxy dialect on -C).
type control struct{ closers []func() }

func (c *control) Close() {
	for _, f := range c.closers {
		f()
	}
}

func startControl(o *options, cfg *config.Config, eng *engine.Engine, log *logrus.Logger) (*control, error) {
	return &control{}, nil
}
