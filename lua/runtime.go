//go:build lua

package lua

/*
#cgo pkg-config: lua5.4
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"

	"lbd/config"
	"lbd/rules"
)

// Available reports whether this lbd has Lua compiled in.
const Available = true

// Version is the Lua release linked in.
const Version = C.LUA_RELEASE

// Options are what New needs beyond the configuration.
type Options struct {
	// Threads is the number of per-thread states (WorkerMaxCount).
	Threads int
	// Wait bounds how long a request waits for a free per-thread state.
	Wait time.Duration
	// Log receives pound.log messages.
	Log logrus.FieldLogger
}

// errBusy is a request that found no free per-thread state in time.
var errBusy = errors.New("no Lua state became free in time")

// errClosed is a call into a runtime a reload has retired.
var errClosed = errors.New("the Lua runtime was closed by a reload")

// Runtime is the Lua states of one configuration and the functions it
// calls. It implements rules.Scripts and rules.ScriptOwner.
type Runtime struct {
	global  *vm
	gmu     sync.Mutex // held while the global state runs a call
	pool    chan *vm   // the per-thread states not in use
	threads []*vm
	funcs   map[*config.LuaCall]*fn
	wait    time.Duration
	log     logrus.FieldLogger
	gen     atomic.Uint64 // request stash generations

	refs   atomic.Int64 // graphs using the runtime
	active atomic.Int64 // requests holding a session
	closed atomic.Bool
	finish sync.Once
}

// New loads the sources of cfg's Lua section and resolves every Lua
// call of cfg. It returns nil, nil when cfg uses no Lua at all. Errors
// name the statement (FILE:L.C-L.C) they are about.
func New(cfg *config.Config, o Options) (*Runtime, error) {
	if cfg.Lua == nil && len(cfg.LuaCalls) == 0 {
		return nil, nil
	}
	l := cfg.Lua
	if l == nil {
		l = &config.Lua{}
	}
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	rt := &Runtime{funcs: map[*config.LuaCall]*fn{}, wait: o.Wait, log: o.Log}
	rt.refs.Store(1)
	if rt.wait <= 0 {
		rt.wait = 15 * time.Second
	}
	path, cpath := strings.Join(l.Path, ";"), strings.Join(l.CPath, ";")
	if path != "" {
		path += ";"
	}
	if cpath != "" {
		cpath += ";"
	}
	var err error
	if rt.global, err = rt.newVM(l, 0, path, cpath, l.LoadGlobal); err != nil {
		rt.closeStates()
		return nil, err
	}
	if len(l.Load) > 0 {
		n := max(o.Threads, 1)
		rt.pool = make(chan *vm, n)
		for i := 1; i <= n; i++ {
			v, err := rt.newVM(l, i, path, cpath, l.Load)
			if err != nil {
				rt.closeStates()
				return nil, err
			}
			rt.threads = append(rt.threads, v)
			rt.pool <- v
		}
	}
	if err := rt.resolveAll(cfg.LuaCalls); err != nil {
		rt.closeStates()
		return nil, err
	}
	return rt, nil
}

// newVM makes one state and loads srcs into it.
func (rt *Runtime) newVM(l *config.Lua, ord int, path, cpath string, srcs []*config.LuaSource) (*vm, error) {
	v, err := openVM(rt, ord, ord == 0, l.MemoryLimit, l.InstructionLimit, path, cpath)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot create a Lua state: %w", l.Pos, err)
	}
	for _, s := range srcs {
		if err := v.load(s); err != nil {
			v.close()
			return nil, err
		}
	}
	return v, nil
}

// resolveAll decides where each call's function lives: a function the
// per-thread sources define runs there, else one of the global state,
// as Pound resolves them.
func (rt *Runtime) resolveAll(calls []*config.LuaCall) error {
	var errs []error
	for _, c := range calls {
		name := C.CString(c.Func)
		f := &fn{rt: rt, name: name, call: c}
		def := 0
		if len(rt.threads) > 0 {
			def = rt.threads[0].defined(name)
		}
		if def == 0 {
			f.global = true
			def = rt.global.defined(name)
		}
		switch def {
		case 1:
			rt.funcs[c] = f
			continue
		case 0:
			errs = append(errs, fmt.Errorf("%s: Lua function %s not defined", c.Pos, c.Func))
		default:
			errs = append(errs, fmt.Errorf("%s: looking up Lua function %s: %s", c.Pos, c.Func, f.rt.global.message()))
		}
		C.free(unsafe.Pointer(name))
	}
	return errors.Join(errs...)
}

// Resolve returns the function a call was resolved to.
func (rt *Runtime) Resolve(c *config.LuaCall) (rules.Script, error) {
	f, ok := rt.funcs[c]
	if !ok {
		return nil, fmt.Errorf("%s: Lua function %s not defined", c.Pos, c.Func)
	}
	return f, nil
}

// Ref counts one more graph using rt; Unref releases it, and the last
// release closes the states once no request holds them any more.
func (rt *Runtime) Ref() { rt.refs.Add(1) }

// Unref releases one graph's use of rt.
func (rt *Runtime) Unref() {
	if rt.refs.Add(-1) > 0 {
		return
	}
	rt.closed.Store(true)
	if rt.active.Load() == 0 {
		rt.finish.Do(rt.closeStates)
	}
}

// enter starts a request's session; false once rt is closed.
func (rt *Runtime) enter() bool {
	rt.active.Add(1)
	if rt.closed.Load() {
		rt.leave()
		return false
	}
	return true
}

func (rt *Runtime) leave() {
	if rt.active.Add(-1) == 0 && rt.closed.Load() {
		rt.finish.Do(rt.closeStates)
	}
}

// closeStates frees every state; the caller has made sure none is in use.
func (rt *Runtime) closeStates() {
	rt.global.close()
	for _, v := range rt.threads {
		v.close()
	}
	for _, f := range rt.funcs {
		C.free(unsafe.Pointer(f.name))
	}
}

// acquire takes a free per-thread state, waiting up to rt.wait.
func (rt *Runtime) acquire() (*vm, error) {
	select {
	case v := <-rt.pool:
		return v, nil
	default:
	}
	t := time.NewTimer(rt.wait)
	defer t.Stop()
	select {
	case v := <-rt.pool:
		return v, nil
	case <-t.C:
		return nil, errBusy
	}
}

// Release ends a request's session: its stashes are dropped and its
// per-thread state goes back to the pool.
func (rt *Runtime) Release(s *rules.ScriptSession) {
	if v, ok := s.VM.(*vm); ok {
		v.dropStash(s.Gen)
		rt.pool <- v
	}
	if s.Global {
		rt.gmu.Lock()
		rt.global.dropStash(s.Gen)
		rt.gmu.Unlock()
	}
	rt.leave()
}

// fn is a resolved function.
type fn struct {
	rt     *Runtime
	name   *C.char
	global bool
	call   *config.LuaCall
}

// Call runs the function for the request in st (rules.Script).
func (f *fn) Call(env *rules.Env, st *rules.State, m *rules.Message, args [][]byte, mode rules.ScriptMode) (bool, error) {
	s := &st.Script
	if s.Owner == nil {
		if !f.rt.enter() {
			return false, f.fail(errClosed.Error())
		}
		s.Owner, s.Gen = f.rt, f.rt.gen.Add(1)
	}
	if f.global {
		f.rt.gmu.Lock()
		defer f.rt.gmu.Unlock()
		s.Global = true
		return f.rt.global.call(f, env, st, m, args, mode, s.Gen)
	}
	v, ok := s.VM.(*vm)
	if !ok {
		var err error
		if v, err = f.rt.acquire(); err != nil {
			return false, f.fail(err.Error())
		}
		s.VM = v
	}
	return v.call(f, env, st, m, args, mode, s.Gen)
}

// fail is the error of a call that failed with msg.
func (f *fn) fail(msg string) error {
	return &CallError{Pos: f.call.Pos, Func: f.call.Func, Msg: msg}
}

// CallError is a Lua function that failed: a script error (Msg starts
// with the script's file:line), a bound that was hit, or no state free.
type CallError struct {
	Pos  config.Locus
	Func string
	Msg  string
}

func (e *CallError) Error() string {
	return fmt.Sprintf("%s: error calling Lua function %s: %s", e.Pos, e.Func, e.Msg)
}
