//go:build lua

/* What the C files of the binding share among themselves (shim.h is
 * what Go sees). */
#ifndef LBD_SHIM_INT_H
#define LBD_SHIM_INT_H

#include "shim.h"

/* The count hook runs every HOOK_COUNT VM instructions. */
#define HOOK_COUNT 1000
/* Nesting depth of a value serialized for gcall or pound.dump. */
#define SER_DEPTH 64

/* Registry keys. */
#define REG_HTTP "lbd.http"       /* the http object */
#define REG_OBJS "lbd.objs"       /* the API objects, by LBD_OBJ_* */
#define REG_STASHES "lbd.stashes" /* request generation -> stash */
#define REG_NEXT "lbd.next"       /* the original next, for pairs(stash) */

static inline lbd_vm *vmof(lua_State *L) { return *(lbd_vm **)lua_getextraspace(L); }

/* pushname pushes what a dotted name designates (shim.c). */
void lbd_pushname(lua_State *L, const char *name);

/* lbd_open_api makes the pound and stash globals and the API objects
 * (api.c). */
void lbd_open_api(lua_State *L);

/* A value serialized as Lua source, in a malloc'd buffer (ser.c); err is
 * set when a value cannot be written. */
struct sbuf {
	char *p;
	size_t len, cap;
	const char *err;
};

void lbd_ser(lua_State *L, struct sbuf *b, int idx, int top, int depth);
void lbd_ser_list(lua_State *L, struct sbuf *b, int idx, int n);

#endif
