//go:build lua

// Pound's Lua API as scripts see it: the http, pound and stash globals.
// The objects are proxy tables whose metamethods ask Go (lbdOp) for the
// request's data and push what it answers.

#include <stdlib.h>
#include <string.h>

#include "shim_int.h"
#include "_cgo_export.h"

/* ---- the API objects ------------------------------------------------ */

static int raise_buf(lua_State *L, lbd_vm *vm)
{
	luaL_where(L, 1);
	lua_pushlstring(L, vm->buf, vm->len);
	lua_concat(L, 2);
	return lua_error(L);
}

static uint32_t get_len(const char *p)
{
	uint32_t n;
	memcpy(&n, p, 4);
	return n;
}

/* push_list pushes the strings of an LBD_R_LIST result as a table
 * indexed from first: 0 for a repeated header (Pound puts the first value
 * at index 0, the others at 1, 2, ...), 1 for pairs. */
static void push_list(lua_State *L, lbd_vm *vm, int first)
{
	const char *p = vm->buf;
	long long i;
	lua_createtable(L, (int)vm->ival, 1);
	for (i = 0; i < vm->ival; i++) {
		uint32_t n = get_len(p);
		lua_pushlstring(L, p + 4, n);
		lua_rawseti(L, -2, first + i);
		p += 4 + n;
	}
}

static int version_str(lua_State *L)
{
	lua_pushvalue(L, lua_upvalueindex(1));
	return 1;
}

/* push_result pushes what Go returned; it returns the number of values. */
static int push_result(lua_State *L, lbd_vm *vm, int rc)
{
	switch (rc) {
	case LBD_R_ERR:
		return raise_buf(L, vm);
	case LBD_R_NIL:
		lua_pushnil(L);
		return 1;
	case LBD_R_STR:
		lua_pushlstring(L, vm->buf, vm->len);
		return 1;
	case LBD_R_INT:
		lua_pushinteger(L, (lua_Integer)vm->ival);
		return 1;
	case LBD_R_BOOL:
		lua_pushboolean(L, vm->ival != 0);
		return 1;
	case LBD_R_LIST:
		push_list(L, vm, 0);
		return 1;
	case LBD_R_OBJ:
		lua_getfield(L, LUA_REGISTRYINDEX, REG_OBJS);
		lua_rawgeti(L, -1, (lua_Integer)vm->ival);
		lua_remove(L, -2);
		return 1;
	case LBD_R_VERSION:
		lua_createtable(L, 0, 2);
		lua_createtable(L, 0, 2);
		lua_pushlstring(L, vm->buf, vm->len);
		lua_pushvalue(L, -1);
		lua_setfield(L, -3, "__name");
		lua_pushcclosure(L, version_str, 1);
		lua_setfield(L, -2, "__tostring");
		lua_setmetatable(L, -2);
		lua_pushinteger(L, 1);
		lua_setfield(L, -2, "major");
		lua_pushinteger(L, (lua_Integer)vm->ival);
		lua_setfield(L, -2, "minor");
		return 1;
	}
	return 0;
}

static int op(lua_State *L, int opn, int obj, const char *a, size_t alen, const char *b,
	      size_t blen, long long ival, int vtype)
{
	lbd_vm *vm = vmof(L);
	return lbdOp(vm->handle, opn, obj, (char *)a, alen, (char *)b, blen, ival, vtype);
}

static int obj_of(lua_State *L) { return (int)lua_tointeger(L, lua_upvalueindex(1)); }

/* key_of returns the key at index 2 as a string (a copy, so a number key
 * is not converted in place), or NULL when it is neither. */
static const char *key_of(lua_State *L, size_t *len)
{
	int t = lua_type(L, 2);
	if (t != LUA_TSTRING && t != LUA_TNUMBER)
		return NULL;
	lua_pushvalue(L, 2);
	return lua_tolstring(L, -1, len);
}

static int is_headers(int obj) { return obj == LBD_OBJ_REQHDR || obj == LBD_OBJ_RESPHDR; }

/* static_field pushes the API object a field of another one is, without
 * asking Go (they never change); 0 when the field is not one. */
static int static_field(lua_State *L, int obj, const char *k)
{
	lbd_vm *vm = vmof(L);
	int to = -1;
	switch (obj) {
	case LBD_OBJ_HTTP:
		if (strcmp(k, "req") == 0)
			to = LBD_OBJ_REQ;
		else if (vm->mode >= LBD_MODE_RESPONSE && strcmp(k, "resp") == 0)
			to = LBD_OBJ_RESP;
		else if (vm->mode >= LBD_MODE_RESPONSE && strcmp(k, "service") == 0)
			to = LBD_OBJ_SERVICE;
		break;
	case LBD_OBJ_REQ:
		if (strcmp(k, "headers") == 0)
			to = LBD_OBJ_REQHDR;
		else if (strcmp(k, "query") == 0)
			to = LBD_OBJ_QUERY;
		break;
	case LBD_OBJ_RESP:
		if (strcmp(k, "headers") == 0)
			to = LBD_OBJ_RESPHDR;
		break;
	}
	if (to < 0)
		return 0;
	lua_getfield(L, LUA_REGISTRYINDEX, REG_OBJS);
	lua_rawgeti(L, -1, to);
	return 1;
}

static int proxy_index(lua_State *L)
{
	int obj = obj_of(L);
	size_t kl;
	const char *k = key_of(L, &kl);
	if (k != NULL && obj != LBD_OBJ_REQHDR && obj != LBD_OBJ_RESPHDR && obj != LBD_OBJ_QUERY &&
	    static_field(L, obj, k))
		return 1;
	if (k == NULL) {
		if (is_headers(obj) || obj == LBD_OBJ_QUERY) {
			lua_pushnil(L);
			return 1;
		}
		return luaL_error(L, "%s: no such field", luaL_typename(L, 2));
	}
	return push_result(L, vmof(L), op(L, LBD_OP_INDEX, obj, k, kl, NULL, 0, 0, 0));
}

/* value_of turns the value at idx into a string for Go: strings and
 * numbers (converted on a copy); NULL for anything else. */
static const char *value_of(lua_State *L, int idx, size_t *len)
{
	int t = lua_type(L, idx);
	if (t != LUA_TSTRING && t != LUA_TNUMBER)
		return NULL;
	lua_pushvalue(L, idx);
	return lua_tolstring(L, -1, len);
}

static void check(lua_State *L, int rc)
{
	if (rc == LBD_R_ERR)
		raise_buf(L, vmof(L));
}

/* add_all appends "name: v" for each value of the table at idx (name
 * NULL: the table maps names to values). */
static void add_all(lua_State *L, int obj, int idx, const char *name, size_t nl)
{
	idx = lua_absindex(L, idx);
	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		size_t kl = nl, vl;
		const char *k = name, *v;
		int top = lua_gettop(L);
		if (k == NULL && (k = value_of(L, -2, &kl)) == NULL)
			luaL_error(L, "header name must be a string, not %s", luaL_typename(L, -2));
		if ((v = value_of(L, top, &vl)) == NULL)
			luaL_error(L, "header value must be a string, not %s", luaL_typename(L, top));
		check(L, op(L, LBD_OP_HDR_ADD, obj, k, kl, v, vl, 0, 0));
		lua_settop(L, top - 1);
	}
}

static int proxy_newindex(lua_State *L)
{
	int obj = obj_of(L), vt = lua_type(L, 3), isint = 0;
	size_t kl, vl = 0;
	const char *k = key_of(L, &kl), *v = NULL;
	long long ival = 0;

	if (k == NULL)
		return luaL_error(L, "%s: no such field", luaL_typename(L, 2));
	if (is_headers(obj) && vt == LUA_TTABLE) {
		check(L, op(L, LBD_OP_HDR_DEL, obj, k, kl, NULL, 0, 0, 0));
		add_all(L, obj, 3, k, kl);
		return 0;
	}
	if ((obj == LBD_OBJ_REQ || obj == LBD_OBJ_RESP) && strcmp(k, "headers") == 0 &&
	    (vt == LUA_TTABLE || vt == LUA_TNIL)) {
		int hdr = obj == LBD_OBJ_REQ ? LBD_OBJ_REQHDR : LBD_OBJ_RESPHDR;
		check(L, op(L, LBD_OP_HDR_CLEAR, hdr, NULL, 0, NULL, 0, 0, 0));
		if (vt == LUA_TTABLE)
			add_all(L, hdr, 3, NULL, 0);
		return 0;
	}
	switch (vt) {
	case LUA_TNUMBER: {
		lua_Integer i = lua_tointegerx(L, 3, &isint);
		ival = isint ? (long long)i : (long long)lua_tonumber(L, 3);
		v = value_of(L, 3, &vl);
		break;
	}
	case LUA_TSTRING:
		v = value_of(L, 3, &vl);
		break;
	case LUA_TBOOLEAN:
		ival = lua_toboolean(L, 3);
		break;
	}
	return push_result(L, vmof(L),
			   op(L, LBD_OP_SET, obj, k, kl, v, vl, ival, vt | (isint ? LBD_VINT : 0)));
}

static int proxy_tostring(lua_State *L)
{
	return push_result(L, vmof(L), op(L, LBD_OP_TOSTRING, obj_of(L), NULL, 0, NULL, 0, 0, 0));
}

static int proxy_len(lua_State *L)
{
	return push_result(L, vmof(L), op(L, LBD_OP_LEN, obj_of(L), NULL, 0, NULL, 0, 0, 0));
}

static int pairs_next(lua_State *L)
{
	lua_Integer i = lua_tointeger(L, lua_upvalueindex(2));
	if (lua_rawgeti(L, lua_upvalueindex(1), 2 * i + 1) == LUA_TNIL)
		return 1;
	lua_rawgeti(L, lua_upvalueindex(1), 2 * i + 2);
	lua_pushinteger(L, i + 1);
	lua_replace(L, lua_upvalueindex(2));
	return 2;
}

/* proxy_pairs iterates over the keys and values Go lists, in its order. */
static int proxy_pairs(lua_State *L)
{
	lbd_vm *vm = vmof(L);
	int rc = op(L, LBD_OP_PAIRS, obj_of(L), NULL, 0, NULL, 0, 0, 0);
	if (rc != LBD_R_LIST)
		return push_result(L, vm, rc);
	push_list(L, vm, 1);
	lua_pushinteger(L, 0);
	lua_pushcclosure(L, pairs_next, 2);
	lua_pushvalue(L, 1);
	lua_pushnil(L);
	return 3;
}

static void proxy_mt(lua_State *L, int obj, const char *name, int str, int len, int pairs)
{
	lua_createtable(L, 0, 6);
	lua_pushstring(L, name);
	lua_setfield(L, -2, "__name");
	lua_pushinteger(L, obj);
	lua_pushcclosure(L, proxy_index, 1);
	lua_setfield(L, -2, "__index");
	lua_pushinteger(L, obj);
	lua_pushcclosure(L, proxy_newindex, 1);
	lua_setfield(L, -2, "__newindex");
	if (str) {
		lua_pushinteger(L, obj);
		lua_pushcclosure(L, proxy_tostring, 1);
		lua_setfield(L, -2, "__tostring");
	}
	if (len) {
		lua_pushinteger(L, obj);
		lua_pushcclosure(L, proxy_len, 1);
		lua_setfield(L, -2, "__len");
	}
	if (pairs) {
		lua_pushinteger(L, obj);
		lua_pushcclosure(L, proxy_pairs, 1);
		lua_setfield(L, -2, "__pairs");
	}
	lua_setmetatable(L, -2);
}

/* http:const(name); http.const(name) is accepted too. */
static int http_const(lua_State *L)
{
	size_t n;
	const char *name = luaL_checklstring(L, lua_gettop(L) >= 2 ? 2 : 1, &n);
	return push_result(L, vmof(L), op(L, LBD_OP_CONST, 0, name, n, NULL, 0, 0, 0));
}

/* ---- the pound table -------------------------------------------------- */

static int pound_log(lua_State *L)
{
	size_t n;
	lua_Integer prio;
	const char *msg;
	if (lua_gettop(L) != 2)
		return luaL_error(L, "'log' requires 2 arguments");
	prio = luaL_checkinteger(L, 1);
	msg = luaL_checklstring(L, 2, &n);
	return push_result(L, vmof(L), op(L, LBD_OP_LOG, 0, msg, n, NULL, 0, prio, 0));
}

static int pound_tid(lua_State *L)
{
	return push_result(L, vmof(L), op(L, LBD_OP_TID, 0, NULL, 0, NULL, 0, 0, 0));
}

/* pound.dump(v): v as Lua source; nil and a message when v holds what
 * cannot be written (functions, userdata, threads, cycles). */
static int pound_dump(lua_State *L)
{
	struct sbuf b = {0};
	luaL_checkany(L, 1);
	lua_settop(L, 1);
	lbd_ser(L, &b, 1, 0, 0);
	if (b.err) {
		free(b.p);
		lua_pushnil(L);
		lua_pushfstring(L, "cannot serialize %s", b.err);
		return 2;
	}
	lua_pushlstring(L, b.p ? b.p : "", b.len);
	free(b.p);
	lua_pushnil(L);
	return 2;
}

/* pound.gcall(fn, ...) calls fn in the global state: the arguments go
 * over as Lua source, Go runs the call there with the global state held,
 * and the results come back as a chunk. In the global state it is a
 * plain call. */
static int pound_gcall(lua_State *L)
{
	lbd_vm *vm = vmof(L);
	size_t fl;
	const char *fn = luaL_checklstring(L, 1, &fl);
	int nargs = lua_gettop(L) - 1, rc;
	struct sbuf b = {0};

	if (vm->global) {
		int base = 1;
		lbd_pushname(L, fn);
		if (!lua_isfunction(L, -1))
			return luaL_error(L, "%s: not a function", fn);
		lua_insert(L, base + 1);
		lua_call(L, nargs, LUA_MULTRET);
		return lua_gettop(L) - base;
	}
	lbd_ser_list(L, &b, 2, nargs);
	if (b.err) {
		free(b.p);
		return luaL_error(L, "gcall: cannot pass %s", b.err);
	}
	rc = op(L, LBD_OP_GCALL, 0, fn, fl, b.p, b.len, 0, 0);
	free(b.p);
	if (rc != LBD_R_CHUNK)
		return push_result(L, vm, rc);
	lua_settop(L, 0);
	if (luaL_loadbuffer(L, vm->buf, vm->len, "=gcall") != LUA_OK)
		return lua_error(L);
	lua_call(L, 0, LUA_MULTRET);
	return lua_gettop(L);
}

static int ro_newindex(lua_State *L)
{
	return luaL_error(L, "attempt to modify read-only data");
}

/* ---- stash ---------------------------------------------------------- */

/* push_stash pushes the current request's stash, made on first use. */
static void push_stash(lua_State *L)
{
	lbd_vm *vm = vmof(L);
	if (vm->gen == 0)
		luaL_error(L, "stash: no request is being served");
	lua_getfield(L, LUA_REGISTRYINDEX, REG_STASHES);
	if (lua_rawgeti(L, -1, vm->gen) == LUA_TNIL) {
		lua_pop(L, 1);
		vm->stashed = 1;
		lua_newtable(L);
		lua_pushvalue(L, -1);
		lua_rawseti(L, -3, vm->gen);
	}
	lua_remove(L, -2);
}

static int stash_index(lua_State *L)
{
	push_stash(L);
	lua_pushvalue(L, 2);
	lua_rawget(L, -2);
	return 1;
}

static int stash_newindex(lua_State *L)
{
	push_stash(L);
	lua_pushvalue(L, 2);
	lua_pushvalue(L, 3);
	lua_rawset(L, -3);
	return 0;
}

static int stash_pairs(lua_State *L)
{
	lua_getfield(L, LUA_REGISTRYINDEX, REG_NEXT);
	push_stash(L);
	lua_pushnil(L);
	return 3;
}

/* ---- setting up a state ------------------------------------------- */

static void setfn(lua_State *L, const char *name, lua_CFunction f)
{
	lua_pushcfunction(L, f);
	lua_setfield(L, -2, name);
}

static void setint(lua_State *L, const char *name, lua_Integer v)
{
	lua_pushinteger(L, v);
	lua_setfield(L, -2, name);
}

/* lbd_open_api makes the pound and stash globals and the API objects (the
 * http global is set for each call). */
void lbd_open_api(lua_State *L)
{
	static const char *names[LBD_NOBJ] = {"http", "req", "resp", "headers", "headers", "query", "service"};
	int i;

	lua_getglobal(L, "next");
	lua_setfield(L, LUA_REGISTRYINDEX, REG_NEXT);

	/* pound */
	lua_createtable(L, 0, 16);
	setint(L, "EMERG", 0);
	setint(L, "ALERT", 1);
	setint(L, "CRIT", 2);
	setint(L, "ERR", 3);
	setint(L, "WARNING", 4);
	setint(L, "NOTICE", 5);
	setint(L, "INFO", 6);
	setint(L, "DEBUG", 7);
	setfn(L, "log", pound_log);
	setfn(L, "tid", pound_tid);
	setfn(L, "dump", pound_dump);
	setfn(L, "gcall", pound_gcall);
	lua_createtable(L, 0, 1);
	setfn(L, "__newindex", ro_newindex);
	lua_setmetatable(L, -2);
	lua_setglobal(L, "pound");

	/* stash */
	lua_newtable(L);
	lua_setfield(L, LUA_REGISTRYINDEX, REG_STASHES);
	lua_newtable(L);
	lua_createtable(L, 0, 3);
	setfn(L, "__index", stash_index);
	setfn(L, "__newindex", stash_newindex);
	setfn(L, "__pairs", stash_pairs);
	lua_setmetatable(L, -2);
	lua_setglobal(L, "stash");

	/* the API objects, made once and given out by reference */
	lua_createtable(L, LBD_NOBJ, 0);
	for (i = 0; i < LBD_NOBJ; i++) {
		lua_newtable(L);
		if (i == LBD_OBJ_HTTP)
			setfn(L, "const", http_const);
		proxy_mt(L, i, names[i], i == LBD_OBJ_REQHDR || i == LBD_OBJ_RESPHDR ||
			 i == LBD_OBJ_QUERY || i == LBD_OBJ_SERVICE,
			 i == LBD_OBJ_REQHDR || i == LBD_OBJ_RESPHDR || i == LBD_OBJ_QUERY ||
			 i == LBD_OBJ_SERVICE,
			 i == LBD_OBJ_REQHDR || i == LBD_OBJ_RESPHDR || i == LBD_OBJ_SERVICE);
		if (i == LBD_OBJ_HTTP)
			lua_pushvalue(L, -1), lua_setfield(L, LUA_REGISTRYINDEX, REG_HTTP);
		lua_rawseti(L, -2, i);
	}
	lua_setfield(L, LUA_REGISTRYINDEX, REG_OBJS);
}

