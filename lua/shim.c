//go:build lua

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "_cgo_export.h"

/* The count hook runs every HOOK_COUNT VM instructions. */
#define HOOK_COUNT 1000
/* Nesting depth of a value serialized for gcall or pound.dump. */
#define SER_DEPTH 64

#define REG_HTTP "lbd.http"
#define REG_OBJS "lbd.objs"
#define REG_STASHES "lbd.stashes"
#define REG_NEXT "lbd.next"

static lbd_vm *vmof(lua_State *L) { return *(lbd_vm **)lua_getextraspace(L); }

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
static void pushname(lua_State *L, const char *name)
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

/* ---- serialization (gcall, pound.dump) --------------------------------- */

/* A value serialized as Lua source, built in a malloc'd buffer: reading
 * the values never allocates in Lua, so nothing here can raise. */
struct sbuf {
	char *p;
	size_t len, cap;
	const char *err;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *p;
		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->err = "out of memory";
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_str(struct sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void ser_float(struct sbuf *b, lua_Number x)
{
	char tmp[64];
	if (isnan(x)) {
		sb_str(b, "(0/0)");
		return;
	}
	if (isinf(x)) {
		sb_str(b, x > 0 ? "1e9999" : "-1e9999");
		return;
	}
	snprintf(tmp, sizeof tmp, "%.17g", (double)x);
	if (strpbrk(tmp, ".en") == NULL)
		strcat(tmp, ".0");
	sb_str(b, tmp);
}

static void ser_string(struct sbuf *b, const char *s, size_t n)
{
	size_t i;
	char tmp[8];
	sb_add(b, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)c;
			sb_add(b, tmp, 2);
		} else if (c == '\n') {
			sb_add(b, "\\n", 2);
		} else if (c < 32 || c >= 127) {
			snprintf(tmp, sizeof tmp, "\\%03u", c);
			sb_add(b, tmp, 4);
		} else {
			sb_add(b, (const char *)&s[i], 1);
		}
	}
	sb_add(b, "\"", 1);
}

/* ser appends the value at idx. top: a number at the top level becomes a
 * float, as Pound's gcall passes numbers (lua_pushnumber); inside tables
 * integers stay integers. */
static void ser(lua_State *L, struct sbuf *b, int idx, int top, int depth)
{
	idx = lua_absindex(L, idx);
	switch (lua_type(L, idx)) {
	case LUA_TNIL:
		sb_str(b, "nil");
		return;
	case LUA_TBOOLEAN:
		sb_str(b, lua_toboolean(L, idx) ? "true" : "false");
		return;
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx) && !top) {
			char tmp[32];
			lua_Integer v = lua_tointeger(L, idx);
			if (v == LUA_MININTEGER) {
				sb_str(b, "math.mininteger");
				return;
			}
			snprintf(tmp, sizeof tmp, LUA_INTEGER_FMT, v);
			sb_str(b, tmp);
			return;
		}
		ser_float(b, lua_tonumber(L, idx));
		return;
	case LUA_TSTRING: {
		size_t n;
		const char *s = lua_tolstring(L, idx, &n);
		ser_string(b, s, n);
		return;
	}
	case LUA_TTABLE:
		if (depth >= SER_DEPTH) {
			b->err = "table nested too deep (or cyclic)";
			return;
		}
		if (!lua_checkstack(L, 3)) {
			b->err = "stack overflow";
			return;
		}
		sb_str(b, "{");
		lua_pushnil(L);
		while (!b->err && lua_next(L, idx) != 0) {
			sb_str(b, "[");
			ser(L, b, -2, 0, depth + 1);
			sb_str(b, "]=");
			ser(L, b, -1, 0, depth + 1);
			sb_str(b, ",");
			lua_pop(L, 1);
		}
		if (b->err) {
			lua_pop(L, 1); /* the key lua_next left */
			return;
		}
		sb_str(b, "}");
		return;
	default:
		if (!b->err)
			b->err = lua_typename(L, lua_type(L, idx));
		return;
	}
}

/* ser_list serializes n values from idx as "return v1,v2,...". */
static void ser_list(lua_State *L, struct sbuf *b, int idx, int n)
{
	int i;
	sb_str(b, "return ");
	for (i = 0; i < n && !b->err; i++) {
		if (i > 0)
			sb_str(b, ",");
		ser(L, b, idx + i, 1, 0);
	}
}

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
	ser(L, &b, 1, 0, 0);
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
		pushname(L, fn);
		if (!lua_isfunction(L, -1))
			return luaL_error(L, "%s: not a function", fn);
		lua_insert(L, base + 1);
		lua_call(L, nargs, LUA_MULTRET);
		return lua_gettop(L) - base;
	}
	ser_list(L, &b, 2, nargs);
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

static int setup(lua_State *L)
{
	struct setup_args *a = lua_touserdata(L, 1);
	static const char *names[LBD_NOBJ] = {"http", "req", "resp", "headers", "headers", "query", "service"};
	int i;

	luaL_openlibs(L);
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

	prepend_path(L, "path", a->path);
	prepend_path(L, "cpath", a->cpath);

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
	pushname(L, a->fn);
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
	pushname(L, a->fn);
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
	pushname(L, a->fn);
	if (!lua_isfunction(L, -1))
		return luaL_error(L, "%s: not a function", a->fn);
	base = lua_gettop(L);
	if (luaL_loadbuffer(L, a->payload, a->plen, "=gcall") != LUA_OK)
		return lua_error(L);
	lua_call(L, 0, LUA_MULTRET);
	nargs = lua_gettop(L) - base;
	lua_call(L, nargs, LUA_MULTRET);
	ser_list(L, &b, base, lua_gettop(L) - base + 1);
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
