// Package lua runs Pound 4's Lua extensions: it loads the sources of the
// Lua section, resolves the functions LuaMatch, LuaModify and LuaBackend
// name, and gives them Pound's Lua API (http.req, http.resp, http.service,
// http.resend, stash, pound.gcall, ...) over the request lbd is serving.
//
// # Engine
//
// Pound requires Lua 5.3.5 or later and scripts rely on 5.3 semantics
// (the integer subtype, //, bitwise operators, utf8), and Pound's own
// example jwt.lua needs a C module (require 'openssl') found through
// CPath. No pure-Go Lua 5.3/5.4 was available to this build (the Go module
// proxy refuses github.com/arnodel/golua and github.com/aarzilli/golua;
// Shopify/go-lua is Lua 5.2 and yuin/gopher-lua 5.1, and none of them
// can load C modules). So lbd links the reference interpreter, Lua 5.4
// (Debian liblua5.4-dev, pkg-config lua5.4), through cgo, behind the
// build tag "lua"; without the tag every Lua statement is a
// configuration error and Available is false.
//
// # Safety of the binding
//
// Lua reports errors with longjmp, which must never unwind a Go frame.
// So Go never calls the Lua API: it calls the C entry points of shim.c,
// which do their work inside lua_pcall, and Lua calls back into Go
// (lbdOp) only to read or change the request; the callback returns plain
// data in a C buffer and the C side pushes it. A Go panic in a callback
// is recovered there and becomes a Lua error.
//
// # States and concurrency
//
// As in Pound, Load sources are loaded into WorkerMaxCount per-thread
// states and LoadGlobal sources into one global state. A lua_State is
// never used by two goroutines at once: a request takes a per-thread
// state from a channel (a free list, no lock held around cgo) at its
// first Lua call and gives it back when it ends, so its stash lives from
// its first condition to its response, as Pound's does (or only until
// its request rules when no response rule calls Lua). The global state
// is shared by definition (Pound locks it too): calls into it hold one
// mutex for the duration of the call, the only lock around a cgo call,
// taken only by LoadGlobal functions and pound.gcall. When every
// per-thread state is in use, a request waits for one (up to
// Options.Wait, then 500): Lua requests in flight are bounded by
// WorkerMaxCount, as Pound's worker threads bound them. A state holds
// the request it serves only for the length of a call (vm.st), so a
// callback can never reach another request.
//
// # Bounds
//
// Each state's allocations are bounded (lua_Alloc with a limit, Lua
// section MemoryLimit, default 64 MiB) and each call's VM instructions
// (a count hook every 1000 instructions, InstructionLimit, default 10^8;
// once spent, the hook runs at every instruction and raises each time,
// so a script that catches the error with pcall gets it again at once).
// C functions run whole between hooks: a huge string.rep is stopped by
// the memory bound, a pathological string.find pattern by neither. An error, a runaway loop or a refused allocation fails the call:
// the request gets a 500 and the log says where (file:line). Scripts are
// trusted code, as in Pound: the whole standard library is open, and
// debug.sethook can switch the instruction bound off.
package lua
