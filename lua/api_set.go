//go:build lua

package lua

/*
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"unsafe"

	"lbd/rules"
)

// Assignments scripts make (http.req.path = p, http.resp.code = c,
// http.resend = true, ...) and pound.gcall.

var typeNames = [...]string{"nil", "boolean", "userdata", "number", "string", "table", "function", "userdata", "thread"}

func typeName(t int) string {
	if t >= 0 && t < len(typeNames) {
		return typeNames[t]
	}
	return "value"
}

// isText reports whether vtype is a value that has a string form.
func isText(t int) bool { return t == tString || t == tNumber }

func (v *vm) set(obj int, key, val []byte, ival int64, vtype int) C.int {
	t := vtype & 0xff
	switch obj {
	case C.LBD_OBJ_HTTP:
		return v.httpSet(key, ival, t)
	case C.LBD_OBJ_REQ:
		return v.reqSet(key, val, t)
	case C.LBD_OBJ_RESP:
		return v.respSet(key, val, t)
	case C.LBD_OBJ_REQHDR, C.LBD_OBJ_RESPHDR:
		m := v.msgOf(obj)
		switch {
		case m == nil:
			return v.errorf("http.resp: not available here")
		case t == tNil:
			m.DeleteHeaders(key)
		case !isText(t):
			return v.errorf("header %s: a value must be a string, not %s", key, typeName(t))
		case !validName(key):
			return v.errorf("invalid header name %q", key)
		case !validValue(val):
			return v.errorf("header %s: invalid character in value", key)
		default:
			v.st.ReplaceHeader(m, key, val)
		}
		return C.LBD_R_NONE
	case C.LBD_OBJ_QUERY:
		switch t {
		case tNil:
			v.st.SetParam(&v.st.Req, string(key), nil, false)
		case tBoolean:
			b := []byte("false")
			if ival != 0 {
				b = []byte("true")
			}
			v.st.SetParam(&v.st.Req, string(key), b, true)
		case tString, tNumber:
			if !validURL(val) {
				return v.errorf("query parameter %s: invalid character in value", key)
			}
			v.st.SetParam(&v.st.Req, string(key), val, true)
		default:
			return v.errorf("query parameter %s: a value must be a string, not %s", key, typeName(t))
		}
		return C.LBD_R_NONE
	case C.LBD_OBJ_SERVICE:
		return v.serviceSet(key, val, t)
	}
	return v.noField(key)
}

// httpSet handles http.balancer and http.resend, which ask to resend the
// request (Rewrite response only).
func (v *vm) httpSet(key []byte, ival int64, t int) C.int {
	switch string(key) {
	case "req", "resp", "resendcount", "service":
		return v.readOnly()
	case "balancer", "resend":
	default:
		return v.noField(key)
	}
	if v.mode != rules.ScriptResponse {
		return v.errorf("http.%s can only be set in Rewrite response", key)
	}
	r := &v.st.X.Resend
	if string(key) == "resend" {
		// Pound: mutually exclusive with http.service.name
		r.Mode, r.Service = rules.ResendNone, nil
		if t != tNil && (t != tBoolean || ival != 0) {
			r.Mode = rules.ResendSame
		}
		return C.LBD_R_NONE
	}
	if t != tNumber {
		return v.errorf("http.balancer: a number is expected, not %s", typeName(t))
	}
	r.MinWeight = int(ival)
	if r.Mode == rules.ResendNone {
		r.Mode = rules.ResendBackend
	}
	return C.LBD_R_NONE
}

func (v *vm) reqSet(key, val []byte, t int) C.int {
	m := &v.st.Req
	switch string(key) {
	case "line", "method", "version":
		return v.readOnly()
	case "headers":
		return v.errorf("http.req.headers: a table is expected, not %s", typeName(t))
	case "query":
		if t == tNil {
			v.st.SetQuery(m, nil, false)
			return C.LBD_R_NONE
		}
	case "path", "url":
	default:
		return v.noField(key)
	}
	if !isText(t) {
		return v.errorf("http.req.%s: a string is expected, not %s", key, typeName(t))
	}
	if !validURL(val) || string(key) != "query" && len(val) == 0 {
		return v.errorf("http.req.%s: invalid %q", key, val)
	}
	switch string(key) {
	case "path":
		v.st.SetPath(m, val)
	case "url":
		v.st.SetURL(m, val)
	default:
		v.st.SetQuery(m, val, true)
	}
	return C.LBD_R_NONE
}

func (v *vm) respSet(key, val []byte, t int) C.int {
	if !v.resp() {
		return v.errorf("http.resp: not available here")
	}
	x := &v.st.X
	switch string(key) {
	case "code":
		code, ok := parseStatus(val)
		if !isText(t) || !ok {
			return v.errorf("http.resp.code: %q is not a status from 100 to 599", val)
		}
		// The reason goes with the code: the standard one unless the
		// script sets another after this.
		x.Status, x.Reason, x.DefaultReason = code, nil, true
	case "reason":
		switch {
		case t == tNil:
			x.Reason, x.DefaultReason = nil, true
		case !isText(t) || !validValue(val):
			return v.errorf("http.resp.reason: invalid %q", val)
		default:
			v.st.SetReason(val)
		}
	case "body":
		switch {
		case t == tNil:
			v.st.SetRespBody(nil)
		case isText(t):
			v.st.SetRespBody(val)
		default:
			return v.errorf("http.resp.body: a string is expected, not %s", typeName(t))
		}
	case "headers":
		return v.errorf("http.resp.headers: a table is expected, not %s", typeName(t))
	default:
		return v.noField(key)
	}
	return C.LBD_R_NONE
}

// serviceSet handles http.service.name: resend the request to the
// service named ("/name": a global one), or with nil to the one service
// selection picks.
func (v *vm) serviceSet(key, val []byte, t int) C.int {
	switch string(key) {
	case "locus":
		return v.readOnly()
	case "name":
	default:
		return v.noField(key)
	}
	if v.mode != rules.ScriptResponse {
		return v.errorf("http.service.name can only be set in Rewrite response")
	}
	r := &v.st.X.Resend
	if t == tNil {
		r.Mode, r.Service = rules.ResendService, nil
		return C.LBD_R_NONE
	}
	if t != tString {
		return v.errorf("http.service.name: a string is expected, not %s", typeName(t))
	}
	name, global, where := val, false, "listener"
	if len(name) > 0 && name[0] == '/' {
		name, global, where = name[1:], true, "global"
	}
	var svc rules.ServiceRef
	ok := false
	if v.st.X.Services != nil {
		svc, ok = v.st.X.Services.FindService(string(name), global)
	}
	if !ok {
		return v.errorf("no %s service with name %s", where, name)
	}
	r.Mode, r.Service = rules.ResendService, svc
	return C.LBD_R_NONE
}

// editHeaders removes, appends or clears header lines (headers[k] = {...}
// and headers = {...}).
func (v *vm) editHeaders(op, obj int, name, value []byte) C.int {
	m := v.msgOf(obj)
	if m == nil {
		return v.errorf("http.resp: not available here")
	}
	switch op {
	case C.LBD_OP_HDR_DEL:
		m.DeleteHeaders(name)
	case C.LBD_OP_HDR_CLEAR:
		m.ClearHeaders()
	default:
		if !validName(name) {
			return v.errorf("invalid header name %q", name)
		}
		if !validValue(value) {
			return v.errorf("header %s: invalid character in value", name)
		}
		v.st.AddHeader(m, name, value)
	}
	return C.LBD_R_NONE
}

// gcall runs pound.gcall's function in the global state, with the
// global state held; fn is NUL-terminated (a Lua string).
func (v *vm) gcall(fn *C.char, payload []byte) C.int {
	g := v.rt.global
	v.rt.gmu.Lock()
	defer v.rt.gmu.Unlock()
	var gen uint64
	if v.st != nil {
		v.st.Script.Global = true
		gen = v.st.Script.Gen
	}
	g.env, g.st, g.m, g.mode = v.env, v.st, v.m, v.mode
	var p *C.char
	if len(payload) > 0 {
		p = (*C.char)(unsafe.Pointer(&payload[0]))
	}
	rc := C.lbd_gexec(g.c, fn, p, C.size_t(len(payload)), C.int(v.mode), C.lua_Integer(gen))
	g.env, g.st, g.m = nil, nil, nil
	out := unsafe.Slice((*byte)(unsafe.Pointer(g.c.buf)), int(g.c.len))
	v.out = append(v.out[:0], out...)
	if rc != 0 {
		return v.emit(C.LBD_R_ERR)
	}
	return v.emit(C.LBD_R_CHUNK)
}

// validName reports whether b is a header field name (RFC 9110 token).
func validName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}

// validValue refuses what would split a header or the status line.
func validValue(b []byte) bool {
	return bytes.IndexByte(b, '\r') < 0 && bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, 0) < 0
}

// validURL refuses what would break the request line.
func validURL(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}
