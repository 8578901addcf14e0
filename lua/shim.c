//go:build lua

// The core of the binding: states, their allocator and instruction budget,
// protected calls and their error messages, loading sources and calling
// functions. api.c has the objects scripts see, ser.c the serializer.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim_int.h"

/* ---- allocation, budget, errors ------------------------------------ */

/* mem_where records where the script was when an allocation was refused:
 * Lua raises memory errors without calling the message handler, so the
 * position would be lost. Reading debug information allocates nothing. */
static void mem_where(lbd_vm *vm)
{
	lua_Debug ar;
	int level;

	vm->mem_where[0] = 0;
	if (vm->L == NULL)
		return;
	for (level = 0; lua_getstack(vm->L, level, &ar); level++) {
		if (lua_getinfo(vm->L, "Sl", &ar) && ar.currentline > 0) {
			snprintf(vm->mem_where, sizeof vm->mem_where, "%s:%d: ", ar.short_src,
				 ar.currentline);
			return;
		}
	}
}

/* lbd_alloc is realloc with a bound on the state's total: a request that
 * would pass it fails, and Lua raises "not enough memory". Shrinking never
 * fails, as Lua requires. */
static void *lbd_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	lbd_vm *vm = ud;
	void *p;

	if (ptr == NULL)
		osize = 0; /* osize then encodes the object type */
	if (nsize == 0) {
		free(ptr);
		vm->used -= osize;
		return NULL;
	}
	if (nsize > osize && vm->limit > 0 && vm->used - osize + nsize > vm->limit) {
		mem_where(vm); /* the last refusal is the one that fails */
		vm->mem_hit = 1;
		return NULL;
	}
	p = realloc(ptr, nsize);
	if (p == NULL) {
		if (nsize > osize)
			return NULL;
		p = ptr; /* keep the larger block; account it as shrunk */
	}
	vm->used = vm->used - osize + nsize;
	return p;
}

/* lbd_hook spends the call's instruction budget. Once it is gone the hook
 * runs at every instruction and raises each time: a script that catches
 * the error (pcall, coroutine.resume) gets it again at the next
 * instruction it runs outside the protected call, so the call ends. */
static void lbd_hook(lua_State *L, lua_Debug *ar)
{
	lbd_vm *vm = vmof(L);
	lua_Debug d;
	int count = lua_gethookcount(L);

	(void)ar;
	if (vm->budget_max <= 0)
		return;
	vm->budget -= count;
	if (vm->budget >= 0) {
		if (count != HOOK_COUNT) /* a thread left over from a spent call */
			lua_sethook(L, lbd_hook, LUA_MASKCOUNT, HOOK_COUNT);
		return;
	}
	vm->budget_hit = 1;
	if (count != 1)
		lua_sethook(L, lbd_hook, LUA_MASKCOUNT, 1);
	if (lua_getstack(L, 0, &d) && lua_getinfo(L, "Sl", &d) && d.currentline > 0)
		lua_pushfstring(L, "%s:%d: instruction limit (%I) exceeded", d.short_src,
				d.currentline, (lua_Integer)vm->budget_max);
	else
		lua_pushfstring(L, "instruction limit (%I) exceeded", (lua_Integer)vm->budget_max);
	lua_error(L);
}

/* A panic is an error outside any protected call: a bug in this file. */
static int lbd_panic(lua_State *L)
{
	const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
	fprintf(stderr, "lbd: unprotected Lua error: %s\n", m);
	abort();
	return 0;
}

int lbd_reserve(lbd_vm *vm, size_t n)
{
	char *p;
	size_t cap;

	if (n <= vm->cap)
		return 1;
	cap = vm->cap ? vm->cap : 256;
	while (cap < n)
		cap *= 2;
	p = realloc(vm->buf, cap);
	if (p == NULL)
		return 0;
	vm->buf = p;
	vm->cap = cap;
	return 1;
}

static void set_buf(lbd_vm *vm, const char *s, size_t n)
{
	if (!lbd_reserve(vm, n + 1)) {
		vm->len = 0;
		return;
	}
	memcpy(vm->buf, s, n);
	vm->buf[n] = 0;
	vm->len = n;
}

/* save_error copies the message a failed protected call left on the
 * stack into buf (the message handler made it a string). */
static void save_error(lbd_vm *vm, int rc)
{
	lua_State *L = vm->L;
	char tmp[256];

	if (rc == LUA_ERRMEM || (rc == LUA_ERRERR && vm->mem_hit)) {
		if (vm->mem_hit)
			snprintf(tmp, sizeof tmp, "%smemory limit (%zu bytes) exceeded", vm->mem_where,
				 vm->limit);
		else
			snprintf(tmp, sizeof tmp, "out of memory");
		set_buf(vm, tmp, strlen(tmp));
		return;
	}
	if (lua_type(L, -1) == LUA_TSTRING) {
		size_t n;
		const char *m = lua_tolstring(L, -1, &n);
		set_buf(vm, m, n);
		return;
	}
	snprintf(tmp, sizeof tmp, "Lua error %d", rc);
	set_buf(vm, tmp, strlen(tmp));
}

/* msgh makes the error a string that starts with the position of the
 * innermost Lua function running ("file:line: "), unless it has one. */
static int msgh(lua_State *L)
{
	lua_Debug ar;
	const char *msg;
	int level;

	if (lua_type(L, 1) != LUA_TSTRING) {
		if (!luaL_callmeta(L, 1, "__tostring") || lua_type(L, -1) != LUA_TSTRING)
			lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
		lua_replace(L, 1);
	}
	lua_settop(L, 1);
	msg = lua_tostring(L, 1);
	for (level = 0; lua_getstack(L, level, &ar); level++) {
		size_t n;
		if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0)
			continue;
		n = strlen(ar.short_src);
		if (strncmp(msg, ar.short_src, n) != 0 || msg[n] != ':')
			lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, msg);
		break;
	}
	return 1;
}

/* pcall_with runs f(ud) protected, with msgh; on error the message is in
 * buf. The stack is left as it was. */
static int pcall_with(lbd_vm *vm, lua_CFunction f, void *ud)
{
	lua_State *L = vm->L;
	int base = lua_gettop(L), rc;

	lua_pushcfunction(L, msgh);
	lua_pushcfunction(L, f);
	lua_pushlightuserdata(L, ud);
	rc = lua_pcall(L, 1, 0, base + 1);
	if (rc != LUA_OK)
		save_error(vm, rc);
	lua_settop(L, base);
	return rc;
}

static void start_call(lbd_vm *vm, lua_Integer gen)
{
	vm->budget = vm->budget_max;
	vm->mem_hit = vm->budget_hit = 0;
	vm->gen = gen;
	if (vm->L != NULL && lua_gethookcount(vm->L) != HOOK_COUNT)
		lua_sethook(vm->L, lbd_hook, LUA_MASKCOUNT, HOOK_COUNT);
}

/* ---- dotted names ----------------------------------------------------- */

/* pushname pushes what a name designates: a global, or a field of one
 * ("mod.fn", "a.b.c"); nil when a link is missing or not a table. */
void lbd_pushname(lua_State *L, const char *name)
{
	const char *dot = strchr(name, '.');

	if (dot == NULL) {
		lua_getglobal(L, name);
		return;
	}
	lua_pushglobaltable(L);
	for (;;) {
		size_t n;
		dot = strchr(name, '.');
		n = dot ? (size_t)(dot - name) : strlen(name);
		if (!lua_istable(L, -1)) {
			lua_pop(L, 1);
			lua_pushnil(L);
			return;
		}
		lua_pushlstring(L, name, n);
		lua_gettable(L, -2);
		lua_remove(L, -2);
		if (dot == NULL)
			return;
		name = dot + 1;
	}
}

/* ---- states ----------------------------------------------------------- */

struct setup_args {
	const char *path, *cpath;
	int ord, global;
};

static void prepend_path(lua_State *L, const char *field, const char *prefix)
{
	if (prefix == NULL || *prefix == 0)
		return;
	lua_getglobal(L, "package");
	lua_pushstring(L, prefix);
	lua_getfield(L, -2, field);
	lua_concat(L, 2);
	lua_setfield(L, -2, field);
	lua_pop(L, 1);
}

static int setup(lua_State *L)
{
	struct setup_args *a = lua_touserdata(L, 1);

	luaL_openlibs(L);
	lbd_open_api(L);
	prepend_path(L, "path", a->path);
	prepend_path(L, "cpath", a->cpath);
	lua_sethook(L, lbd_hook, LUA_MASKCOUNT, HOOK_COUNT);
	return 0;
}

int lbd_open(lbd_vm **out, uintptr_t handle, int ord, int global, size_t limit,
	     long long budget, const char *path, const char *cpath)
{
	lbd_vm *vm = calloc(1, sizeof *vm);
	struct setup_args a = {path, cpath, ord, global};
	lua_State *L;

	*out = vm;
	if (vm == NULL)
		return LUA_ERRMEM;
	vm->handle = handle;
	vm->ord = ord;
	vm->global = global;
	vm->limit = limit;
	vm->budget_max = budget;
	L = lua_newstate(lbd_alloc, vm);
	if (L == NULL) {
		set_buf(vm, "cannot create a Lua state", 25);
		return LUA_ERRMEM;
	}
	vm->L = L;
	*(lbd_vm **)lua_getextraspace(L) = vm;
	lua_atpanic(L, lbd_panic);
	start_call(vm, 0);
	return pcall_with(vm, setup, &a);
}

void lbd_close(lbd_vm *vm)
{
	if (vm == NULL)
		return;
	if (vm->L)
		lua_close(vm->L);
	free(vm->buf);
	free(vm);
}

int lbd_gc(lbd_vm *vm)
{
	lua_gc(vm->L, LUA_GCCOLLECT);
	return (int)(vm->used >> 10);
}

/* ---- loading -------------------------------------------------------- */

struct load_args {
	const char *file, *modname;
};

/* set_loadctx sets or clears pound.loadctx (raw: the table is read-only
 * to scripts). */
static void set_loadctx(lua_State *L, int on)
{
	lbd_vm *vm = vmof(L);
	lua_getglobal(L, "pound");
	lua_pushliteral(L, "loadctx");
	if (on)
		lua_pushinteger(L, vm->ord);
	else
		lua_pushnil(L);
	lua_rawset(L, -3);
	lua_pop(L, 1);
}

/* do_load loads a source as Pound does: unless package.loaded[modname]
 * is set, the file runs, and a table it returns becomes
 * package.loaded[modname]; the global modname is then set to it. */
static int do_load(lua_State *L)
{
	lbd_vm *vm = vmof(L);
	struct load_args *a = lua_touserdata(L, 1);

	set_loadctx(L, 1);

	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	lua_getfield(L, -1, a->modname);
	if (!lua_toboolean(L, -1)) {
		lua_pop(L, 1);
		if (luaL_loadfile(L, a->file) != LUA_OK)
			return lua_error(L);
		vm->phase = 1;
		lua_call(L, 0, 1);
		if (!lua_istable(L, -1)) {
			lua_pop(L, 2);
			goto done;
		}
		lua_pushvalue(L, -1);
		lua_setfield(L, -3, a->modname);
	}
	lua_setglobal(L, a->modname);
	lua_pop(L, 1);
done:
	set_loadctx(L, 0);
	return 0;
}

int lbd_load(lbd_vm *vm, const char *file, const char *modname)
{
	struct load_args a = {file, modname};
	start_call(vm, 0);
	vm->phase = 0;
	return pcall_with(vm, do_load, &a);
}

struct defined_args {
	const char *fn;
	int yes;
};

static int do_defined(lua_State *L)
{
	struct defined_args *a = lua_touserdata(L, 1);
	lbd_pushname(L, a->fn);
	a->yes = lua_isfunction(L, -1);
	return 0;
}

/* lbd_defined reports whether fn names a function: 1 yes, 0 no, -1 error. */
int lbd_defined(lbd_vm *vm, const char *fn)
{
	struct defined_args a = {fn, 0};
	start_call(vm, 0);
	if (pcall_with(vm, do_defined, &a) != LUA_OK)
		return -1;
	return a.yes;
}

/* ---- calls ------------------------------------------------------------ */

struct call_args {
	const char *fn, *args;
	const size_t *lens;
	int nargs, want, result;
};

static void set_http(lua_State *L, int on)
{
	if (on)
		lua_getfield(L, LUA_REGISTRYINDEX, REG_HTTP);
	else
		lua_pushnil(L);
	lua_setglobal(L, "http");
}

static int do_call(lua_State *L)
{
	struct call_args *a = lua_touserdata(L, 1);
	const char *p = a->args;
	int i;

	set_http(L, 1);
	lbd_pushname(L, a->fn);
	if (!lua_isfunction(L, -1))
		return luaL_error(L, "Lua function %s not defined", a->fn);
	luaL_checkstack(L, a->nargs, "too many arguments");
	for (i = 0; i < a->nargs; i++) {
		lua_pushlstring(L, p, a->lens[i]);
		p += a->lens[i];
	}
	lua_call(L, a->nargs, a->want);
	if (a->want)
		a->result = lua_toboolean(L, -1);
	set_http(L, 0);
	return 0;
}

static int do_unset_http(lua_State *L)
{
	set_http(L, 0);
	return 0;
}

/* unset_http clears the http global after a failed call; only memory can
 * make that fail, and the next call sets it again anyway. */
static void unset_http(lua_State *L)
{
	lua_pushcfunction(L, do_unset_http);
	if (lua_pcall(L, 0, 0, 0) != LUA_OK)
		lua_pop(L, 1);
}

/* lbd_call calls fn with the nargs strings packed in args; want 1 asks
 * for a boolean result (in vm->result). */
int lbd_call(lbd_vm *vm, const char *fn, const char *args, const size_t *lens,
	     int nargs, int want, int mode, lua_Integer gen)
{
	struct call_args a = {fn, args, lens, nargs, want, 0};
	int rc;
	start_call(vm, gen);
	vm->mode = mode;
	rc = pcall_with(vm, do_call, &a);
	if (rc != LUA_OK) {
		unset_http(vm->L);
		return rc;
	}
	vm->result = a.result;
	return rc;
}

struct gexec_args {
	const char *fn, *payload;
	size_t plen;
};

static int do_gexec(lua_State *L)
{
	lbd_vm *vm = vmof(L);
	struct gexec_args *a = lua_touserdata(L, 1);
	struct sbuf b = {0};
	int base, nargs;

	lua_settop(L, 0);
	set_http(L, 1);
	lbd_pushname(L, a->fn);
	if (!lua_isfunction(L, -1))
		return luaL_error(L, "%s: not a function", a->fn);
	base = lua_gettop(L);
	if (luaL_loadbuffer(L, a->payload, a->plen, "=gcall") != LUA_OK)
		return lua_error(L);
	lua_call(L, 0, LUA_MULTRET);
	nargs = lua_gettop(L) - base;
	lua_call(L, nargs, LUA_MULTRET);
	lbd_ser_list(L, &b, base, lua_gettop(L) - base + 1);
	if (b.err) {
		free(b.p);
		return luaL_error(L, "gcall: cannot return %s", b.err);
	}
	free(vm->buf);
	vm->buf = b.p;
	vm->len = b.len;
	vm->cap = b.cap;
	set_http(L, 0);
	return 0;
}

/* lbd_gexec runs a gcall in the global state: fn with the arguments the
 * payload chunk returns; the results are left in buf as a chunk. */
int lbd_gexec(lbd_vm *vm, const char *fn, const char *payload, size_t plen, int mode,
	      lua_Integer gen)
{
	struct gexec_args a = {fn, payload, plen};
	int rc;
	start_call(vm, gen);
	vm->mode = mode;
	rc = pcall_with(vm, do_gexec, &a);
	if (rc != LUA_OK)
		unset_http(vm->L);
	return rc;
}

static int do_stash_drop(lua_State *L)
{
	lbd_vm *vm = vmof(L);
	lua_getfield(L, LUA_REGISTRYINDEX, REG_STASHES);
	lua_pushnil(L);
	lua_rawseti(L, -2, vm->gen);
	return 0;
}

void lbd_stash_drop(lbd_vm *vm, lua_Integer gen)
{
	start_call(vm, gen);
	pcall_with(vm, do_stash_drop, NULL);
	vm->gen = 0;
	vm->stashed = 0;
}
