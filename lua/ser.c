//go:build lua

// Values as Lua source, for pound.gcall (across states) and pound.dump.

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim_int.h"

/* The output goes to a malloc'd buffer and reading the values never
 * allocates in Lua, so nothing here can raise: an error is left in
 * b->err. */

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
void lbd_ser(lua_State *L, struct sbuf *b, int idx, int top, int depth)
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
			lbd_ser(L, b, -2, 0, depth + 1);
			sb_str(b, "]=");
			lbd_ser(L, b, -1, 0, depth + 1);
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
void lbd_ser_list(lua_State *L, struct sbuf *b, int idx, int n)
{
	int i;
	sb_str(b, "return ");
	for (i = 0; i < n && !b->err; i++) {
		if (i > 0)
			sb_str(b, ",");
		lbd_ser(L, b, idx + i, 1, 0);
	}
}
