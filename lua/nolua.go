//go:build !lua

package lua

import (
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/rules"
)

// Available reports whether this lbd has Lua compiled in: it was built
// without the "lua" tag (liblua5.4-dev), so every Lua statement is a
// configuration error.
const Available = false

// Version is the Lua release linked in: none.
const Version = ""

// Options are what New needs beyond the configuration.
type Options struct {
	Threads int
	Wait    time.Duration
	Log     logrus.FieldLogger
}

// Runtime stands for the Lua states this build cannot have.
type Runtime struct{}

var errNoLua = errors.New("this lbd was built without Lua")

// New fails for any configuration that uses Lua.
func New(cfg *config.Config, _ Options) (*Runtime, error) {
	if cfg.Lua == nil && len(cfg.LuaCalls) == 0 {
		return nil, nil
	}
	return nil, errNoLua
}

// Resolve never succeeds.
func (rt *Runtime) Resolve(c *config.LuaCall) (rules.Script, error) {
	return nil, errNoLua
}

// Ref and Unref do nothing.
func (rt *Runtime) Ref()   {}
func (rt *Runtime) Unref() {}
