//go:build lua

/*
 * The C half of lbd's Lua binding. Everything that touches a lua_State
 * is here: Lua reports errors with longjmp, which must never cross a Go
 * frame, so Go never calls the Lua API itself. Go calls the lbd_* entry
 * points below, which run their work under lua_pcall; Lua calls back into
 * Go (lbdOp) only for plain data, and the C side pushes what Go returns.
 */
#ifndef LBD_SHIM_H
#define LBD_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

/* The objects of Pound's Lua API, each a proxy table whose metamethods
 * ask Go (the closure's upvalue says which object it is). */
enum {
	LBD_OBJ_HTTP,
	LBD_OBJ_REQ,
	LBD_OBJ_RESP,
	LBD_OBJ_REQHDR,
	LBD_OBJ_RESPHDR,
	LBD_OBJ_QUERY,
	LBD_OBJ_SERVICE,
	LBD_NOBJ
};

/* What Lua asks Go to do. */
enum {
	LBD_OP_INDEX,     /* obj[a] */
	LBD_OP_SET,       /* obj[a] = b (vtype, ival) */
	LBD_OP_TOSTRING,  /* tostring(obj) */
	LBD_OP_LEN,       /* #obj */
	LBD_OP_PAIRS,     /* pairs(obj): a list of keys and values */
	LBD_OP_HDR_DEL,   /* remove headers named a */
	LBD_OP_HDR_ADD,   /* append "a: b" */
	LBD_OP_HDR_CLEAR, /* remove every header */
	LBD_OP_CONST,     /* http:const(a) */
	LBD_OP_LOG,       /* pound.log(ival, a) */
	LBD_OP_TID,       /* pound.tid() */
	LBD_OP_GCALL      /* pound.gcall(a, ...): b is the serialized arguments */
};

/* What Go left in lbd_vm.buf and .ival for the C side to push. */
enum {
	LBD_R_ERR = -1, /* buf holds the error message */
	LBD_R_NIL,
	LBD_R_STR,     /* buf */
	LBD_R_INT,     /* ival */
	LBD_R_BOOL,    /* ival */
	LBD_R_LIST,    /* ival strings in buf, each a 4-byte length and bytes */
	LBD_R_OBJ,     /* the object numbered ival */
	LBD_R_VERSION, /* http.req.version: buf "1.1", ival the minor number */
	LBD_R_NONE,    /* nothing to push */
	LBD_R_CHUNK    /* buf is a chunk returning the values (gcall) */
};

/* rules.ScriptMode from which on http.resp and http.service exist
 * (Rewrite response, LuaBackend); api.go checks it matches. */
#define LBD_MODE_RESPONSE 2

/* Flag added to vtype when a number argument is an integer. */
#define LBD_VINT 0x100

/* One Lua state and what lbd keeps beside it (stored in the state's
 * extra space, so C functions and hooks find it). */
typedef struct lbd_vm {
	lua_State *L;
	uintptr_t handle;  /* cgo.Handle of the Go side */
	int ord;           /* pound.loadctx: 0 global, 1.. per-thread */
	int global;
	size_t used;       /* bytes allocated */
	size_t limit;      /* allocation bound, 0 none */
	long long budget;  /* instructions left in this call */
	long long budget_max;
	int mem_hit;       /* an allocation was refused */
	char mem_where[128]; /* "file:line: " where that happened */
	int budget_hit;    /* the instruction budget ran out */
	lua_Integer gen;   /* the request whose stash is current */
	int phase;         /* loading: 1 once the chunk runs */
	int result;        /* a match's boolean */
	int mode;          /* the call's rules.ScriptMode */
	int stashed;       /* a stash was made since the last drop */
	char *buf;         /* results and error messages */
	size_t len, cap;
	long long ival;
} lbd_vm;

int lbd_open(lbd_vm **out, uintptr_t handle, int ord, int global, size_t limit,
	     long long budget, const char *path, const char *cpath);
void lbd_close(lbd_vm *vm);
int lbd_reserve(lbd_vm *vm, size_t n);
int lbd_load(lbd_vm *vm, const char *file, const char *modname);
int lbd_defined(lbd_vm *vm, const char *fn);
int lbd_call(lbd_vm *vm, const char *fn, const char *args, const size_t *lens,
	     int nargs, int want, int mode, lua_Integer gen);
int lbd_gexec(lbd_vm *vm, const char *fn, const char *payload, size_t plen, int mode,
	      lua_Integer gen);
void lbd_stash_drop(lbd_vm *vm, lua_Integer gen);
int lbd_gc(lbd_vm *vm);

#endif
