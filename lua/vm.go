//go:build lua

package lua

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"unsafe"

	"lbd/config"
	"lbd/rules"
)

// vm is one Lua state and, while a call runs, the request it serves.
type vm struct {
	c      *C.lbd_vm
	handle cgo.Handle
	rt     *Runtime
	ord    int
	// The call in progress (nil between calls): the callbacks read and
	// change the request through these.
	env  *rules.Env
	st   *rules.State
	m    *rules.Message
	mode rules.ScriptMode
	// args packs a call's arguments for C; lens are their lengths.
	args []byte
	lens []C.size_t
	// out is where a callback builds its answer before it goes to C;
	// ops counts the callbacks (benchmarks report it).
	out []byte
	ops uint64
}

// openVM creates a state with the Lua API set up.
func openVM(rt *Runtime, ord int, global bool, limit, budget int64, path, cpath string) (*vm, error) {
	v := &vm{rt: rt, ord: ord}
	v.handle = cgo.NewHandle(v)
	cp, ccp := C.CString(path), C.CString(cpath)
	defer C.free(unsafe.Pointer(cp))
	defer C.free(unsafe.Pointer(ccp))
	g := C.int(0)
	if global {
		g = 1
	}
	rc := C.lbd_open(&v.c, C.uintptr_t(v.handle), C.int(ord), g, C.size_t(limit), C.longlong(budget), cp, ccp)
	if rc != 0 {
		err := errors.New(v.message())
		v.close()
		return nil, err
	}
	return v, nil
}

func (v *vm) close() {
	if v == nil || v.c == nil {
		return
	}
	C.lbd_close(v.c)
	v.c = nil
	v.handle.Delete()
}

// message is the error the last failed entry point left.
func (v *vm) message() string {
	if v.c == nil || v.c.buf == nil {
		return "unknown error"
	}
	return C.GoStringN(v.c.buf, C.int(v.c.len))
}

// load runs one source file, as Pound's Load does.
func (v *vm) load(s *config.LuaSource) error {
	file, name := C.CString(s.File), C.CString(s.Name)
	defer C.free(unsafe.Pointer(file))
	defer C.free(unsafe.Pointer(name))
	if C.lbd_load(v.c, file, name) == 0 {
		return nil
	}
	if v.c.phase == 0 {
		return fmt.Errorf("%s: error loading Lua file %s: %s", s.Pos, s.File, v.message())
	}
	return fmt.Errorf("%s: Lua runtime error: %s", s.Pos, v.message())
}

// defined reports whether name is a function here: 1 yes, 0 no, -1 the
// lookup failed (v.message says why).
func (v *vm) defined(name *C.char) int { return int(C.lbd_defined(v.c, name)) }

// call runs f with args for the request in st.
func (v *vm) call(f *fn, env *rules.Env, st *rules.State, m *rules.Message, args [][]byte, mode rules.ScriptMode, gen uint64) (bool, error) {
	v.args, v.lens = v.args[:0], v.lens[:0]
	for _, a := range args {
		v.args = append(v.args, a...)
		v.lens = append(v.lens, C.size_t(len(a)))
	}
	var ap *C.char
	if len(v.args) > 0 {
		ap = (*C.char)(unsafe.Pointer(&v.args[0]))
	}
	var lp *C.size_t
	if len(v.lens) > 0 {
		lp = &v.lens[0]
	}
	want := C.int(0)
	if mode == rules.ScriptMatch {
		want = 1
	}
	v.env, v.st, v.m, v.mode = env, st, m, mode
	rc := C.lbd_call(v.c, f.name, ap, lp, C.int(len(args)), want, C.int(mode), C.lua_Integer(gen))
	v.env, v.st, v.m = nil, nil, nil
	if rc != 0 {
		err := f.fail(v.message())
		if rc == C.LUA_ERRMEM {
			C.lbd_gc(v.c) // give the next request the memory back
		}
		return false, err
	}
	return v.c.result != 0, nil
}

// dropStash forgets the stash of request gen (a per-thread state has at
// most that one; reading the flag costs no cgo call).
func (v *vm) dropStash(gen uint64) {
	if v.c.stashed != 0 || v.c.global != 0 {
		C.lbd_stash_drop(v.c, C.lua_Integer(gen))
	}
}
