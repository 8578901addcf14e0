//go:build lua

package lua

/*
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"runtime/cgo"
	"unsafe"

	"lbd/rules"
)

// Pound's Lua API (pound.texi "Lua API") over the request a call serves.
// lbdOp is the one entry from C; it never calls the Lua API (see doc.go):
// it reads or changes the request and leaves the answer in the state's
// C buffer for shim.c to push.

// shim.c answers http.resp and http.service itself from this mode on.
var _ = [1]struct{}{}[rules.ScriptResponse-C.LBD_MODE_RESPONSE]
var _ = [1]struct{}{}[rules.ScriptBackend-C.LBD_MODE_RESPONSE-1]

// Lua type numbers C passes as vtype.
const (
	tNil     = C.LUA_TNIL
	tBoolean = C.LUA_TBOOLEAN
	tNumber  = C.LUA_TNUMBER
	tString  = C.LUA_TSTRING
)

//export lbdOp
func lbdOp(h C.uintptr_t, op, obj C.int, a *C.char, alen C.size_t, b *C.char, blen C.size_t, ival C.longlong, vtype C.int) (rc C.int) {
	v := cgo.Handle(h).Value().(*vm)
	v.ops++
	defer func() {
		if r := recover(); r != nil {
			rc = v.errorf("internal error: %v", r)
		}
	}()
	if op == C.LBD_OP_GCALL {
		return v.gcall(a, cbytes(b, blen))
	}
	return v.op(int(op), int(obj), cbytes(a, alen), cbytes(b, blen), int64(ival), int(vtype))
}

// cbytes views C memory; it must not be kept after the callback.
func cbytes(p *C.char, n C.size_t) []byte {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
}

// emit copies v.out to the C buffer and returns kind.
func (v *vm) emit(kind C.int) C.int {
	n := len(v.out)
	if int(v.c.cap) < n+1 && C.lbd_reserve(v.c, C.size_t(n+1)) == 0 {
		v.c.len = 0
		return C.LBD_R_ERR
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(v.c.buf)), n+1)
	copy(dst, v.out)
	dst[n] = 0
	v.c.len = C.size_t(n)
	return kind
}

func (v *vm) str(b []byte) C.int {
	v.out = append(v.out[:0], b...)
	return v.emit(C.LBD_R_STR)
}

func (v *vm) integer(n int64) C.int {
	v.c.ival = C.longlong(n)
	return C.LBD_R_INT
}

func (v *vm) boolean(b bool) C.int {
	v.c.ival = 0
	if b {
		v.c.ival = 1
	}
	return C.LBD_R_BOOL
}

func (v *vm) object(obj int) C.int {
	v.c.ival = C.longlong(obj)
	return C.LBD_R_OBJ
}

// item appends one string to a list result.
func (v *vm) item(b []byte) {
	v.out = binary.LittleEndian.AppendUint32(v.out, uint32(len(b)))
	v.out = append(v.out, b...)
	v.c.ival++
}

func (v *vm) startList() {
	v.out = v.out[:0]
	v.c.ival = 0
}

func (v *vm) errorf(format string, a ...any) C.int {
	v.out = fmt.Appendf(v.out[:0], format, a...)
	return v.emit(C.LBD_R_ERR)
}

func (v *vm) noField(key []byte) C.int { return v.errorf("%s: no such field", key) }

func (v *vm) readOnly() C.int { return v.errorf("attempt to modify read-only data") }

// resp reports whether the call may see the response (Rewrite response
// and LuaBackend), as Pound's http.resp, resend, service are.
func (v *vm) resp() bool {
	return v.mode == rules.ScriptResponse || v.mode == rules.ScriptBackend
}

func (v *vm) op(op, obj int, a, b []byte, ival int64, vtype int) C.int {
	switch op {
	case C.LBD_OP_LOG:
		v.rt.logf(ival, a)
		return C.LBD_R_NONE
	case C.LBD_OP_TID:
		return v.integer(int64(v.tid()))
	}
	if v.st == nil {
		return v.errorf("http: no request is being served")
	}
	switch op {
	case C.LBD_OP_INDEX:
		return v.index(obj, a)
	case C.LBD_OP_SET:
		return v.set(obj, a, b, ival, vtype)
	case C.LBD_OP_TOSTRING:
		return v.tostring(obj)
	case C.LBD_OP_LEN:
		return v.length(obj)
	case C.LBD_OP_PAIRS:
		return v.pairs(obj)
	case C.LBD_OP_HDR_DEL, C.LBD_OP_HDR_ADD, C.LBD_OP_HDR_CLEAR:
		return v.editHeaders(op, obj, a, b)
	case C.LBD_OP_CONST:
		if val, ok := v.env.Constant(string(a)); ok {
			v.out = append(v.out[:0], val...)
			return v.emit(C.LBD_R_STR)
		}
		return C.LBD_R_NIL
	}
	return v.errorf("unknown operation %d", op)
}

// msgOf is the message an object's headers live in, or nil when the
// call may not reach it.
func (v *vm) msgOf(obj int) *rules.Message {
	switch {
	case obj == C.LBD_OBJ_REQHDR:
		return &v.st.Req
	case obj == C.LBD_OBJ_RESPHDR && v.resp():
		return &v.st.Resp
	}
	return nil
}

func (v *vm) index(obj int, key []byte) C.int {
	switch obj {
	case C.LBD_OBJ_HTTP:
		return v.httpIndex(key)
	case C.LBD_OBJ_REQ:
		return v.reqIndex(key)
	case C.LBD_OBJ_RESP:
		return v.respIndex(key)
	case C.LBD_OBJ_REQHDR, C.LBD_OBJ_RESPHDR:
		return v.headerIndex(obj, key)
	case C.LBD_OBJ_QUERY:
		val, ok := v.st.Req.Param(string(key))
		if !ok {
			return C.LBD_R_NIL
		}
		return v.str(val)
	case C.LBD_OBJ_SERVICE:
		return v.serviceIndex(key)
	}
	return v.noField(key)
}

func (v *vm) httpIndex(key []byte) C.int {
	x := &v.st.X
	switch string(key) {
	case "req":
		return v.object(C.LBD_OBJ_REQ)
	case "rmt_ip":
		v.out = v.st.Client.AppendTo(v.out[:0])
		return v.emit(C.LBD_R_STR)
	case "fwd_ip":
		v.out = v.st.RemoteIP(v.env, true).AppendTo(v.out[:0])
		return v.emit(C.LBD_R_STR)
	case "balancer":
		if x.Resend.Mode != rules.ResendNone {
			return v.integer(int64(x.Resend.MinWeight))
		}
		return v.integer(int64(x.Tier))
	}
	if !v.resp() {
		return v.noField(key)
	}
	switch string(key) {
	case "resp":
		return v.object(C.LBD_OBJ_RESP)
	case "service":
		return v.object(C.LBD_OBJ_SERVICE)
	case "resend":
		return v.boolean(x.Resend.Mode != rules.ResendNone)
	case "resendcount":
		return v.integer(int64(x.Resend.Count))
	}
	return v.noField(key)
}

func (v *vm) reqIndex(key []byte) C.int {
	m := &v.st.Req
	switch string(key) {
	case "method":
		return v.str(m.Method)
	case "url":
		return v.str(m.URL)
	case "path":
		return v.str(m.Path())
	case "line":
		v.out = append(append(append(v.out[:0], m.Method...), ' '), m.URL...)
		v.out = append(append(v.out, " HTTP/1."...), byte('0'+v.st.X.Minor))
		return v.emit(C.LBD_R_STR)
	case "headers":
		return v.object(C.LBD_OBJ_REQHDR)
	case "query":
		return v.object(C.LBD_OBJ_QUERY)
	case "version":
		v.c.ival = C.longlong(v.st.X.Minor)
		v.out = append(v.out[:0], "1."...)
		v.out = append(v.out, byte('0'+v.st.X.Minor))
		return v.emit(C.LBD_R_VERSION)
	case "body":
		if !v.st.X.HasBody {
			return C.LBD_R_NIL
		}
		return v.str(v.st.X.Body)
	}
	return v.noField(key)
}

func (v *vm) respIndex(key []byte) C.int {
	if !v.resp() {
		return v.errorf("http.resp: not available here")
	}
	x := &v.st.X
	switch string(key) {
	case "code":
		return v.integer(int64(x.Status))
	case "reason":
		if x.DefaultReason {
			v.out = append(v.out[:0], reasonOf(x.Status)...)
			return v.emit(C.LBD_R_STR)
		}
		return v.str(x.Reason)
	case "headers":
		return v.object(C.LBD_OBJ_RESPHDR)
	case "body":
		if !x.BodySet {
			return C.LBD_R_NIL
		}
		return v.str(x.RespBody)
	}
	return v.noField(key)
}

// headerIndex is headers[name]: nil, the value, or with repeated lines
// a table of the values (Pound's layout: the first at index 0).
func (v *vm) headerIndex(obj int, name []byte) C.int {
	m := v.msgOf(obj)
	if m == nil {
		return v.errorf("http.resp: not available here")
	}
	v.startList()
	for _, l := range m.Lines {
		if rules.NameIs(l, name) {
			v.item(rules.LineValue(l))
		}
	}
	switch v.c.ival {
	case 0:
		return C.LBD_R_NIL
	case 1:
		return v.str(v.out[4:])
	}
	return v.emit(C.LBD_R_LIST)
}

func (v *vm) serviceIndex(key []byte) C.int {
	if !v.resp() {
		return v.errorf("http.service: not available here")
	}
	svc := v.service()
	switch string(key) {
	case "name":
		if svc == nil {
			return C.LBD_R_NIL
		}
		v.out = append(v.out[:0], svc.ScriptName()...)
		return v.emit(C.LBD_R_STR)
	case "locus":
		if svc == nil {
			return C.LBD_R_NIL
		}
		v.out = append(v.out[:0], svc.ScriptLocus()...)
		return v.emit(C.LBD_R_STR)
	}
	return v.noField(key)
}

// service is http.service: the service a resend goes to once one is
// set, else the one serving the request.
func (v *vm) service() rules.ServiceRef {
	x := &v.st.X
	if x.Resend.Mode == rules.ResendService {
		return x.Resend.Service
	}
	return x.Service
}

func (v *vm) tostring(obj int) C.int {
	switch obj {
	case C.LBD_OBJ_REQHDR, C.LBD_OBJ_RESPHDR:
		m := v.msgOf(obj)
		if m == nil {
			return v.errorf("http.resp: not available here")
		}
		v.out = v.out[:0]
		for _, l := range m.Lines {
			v.out = append(append(v.out, l...), '\n')
		}
		return v.emit(C.LBD_R_STR)
	case C.LBD_OBJ_QUERY:
		q, _ := v.st.Req.Query()
		return v.str(q)
	case C.LBD_OBJ_SERVICE:
		svc := v.service()
		if svc == nil || !v.resp() {
			return v.str([]byte("service"))
		}
		v.out = append(v.out[:0], "service "...)
		v.out = append(v.out, svc.ScriptName()...)
		v.out = append(v.out, " @ "...)
		v.out = append(v.out, svc.ScriptLocus()...)
		return v.emit(C.LBD_R_STR)
	}
	return v.errorf("no string form")
}

func (v *vm) length(obj int) C.int {
	switch obj {
	case C.LBD_OBJ_REQHDR, C.LBD_OBJ_RESPHDR:
		m := v.msgOf(obj)
		if m == nil {
			return v.errorf("http.resp: not available here")
		}
		return v.integer(int64(len(m.Lines)))
	case C.LBD_OBJ_QUERY:
		return v.integer(int64(v.st.Req.Params()))
	case C.LBD_OBJ_SERVICE:
		return v.integer(2)
	}
	return v.errorf("no length")
}

// pairs lists keys and values for pairs(): each header line (name and
// value, repeated names included), or the service's locus and name.
func (v *vm) pairs(obj int) C.int {
	v.startList()
	switch obj {
	case C.LBD_OBJ_REQHDR, C.LBD_OBJ_RESPHDR:
		m := v.msgOf(obj)
		if m == nil {
			return v.errorf("http.resp: not available here")
		}
		for _, l := range m.Lines {
			v.item(rules.LineName(l))
			v.item(rules.LineValue(l))
		}
	case C.LBD_OBJ_SERVICE:
		if svc := v.service(); svc != nil && v.resp() {
			v.item([]byte("locus"))
			v.item([]byte(svc.ScriptLocus()))
			v.item([]byte("name"))
			v.item([]byte(svc.ScriptName()))
		}
	default:
		return v.errorf("not iterable")
	}
	return v.emit(C.LBD_R_LIST)
}

// tid is pound.tid: the number of the per-thread state the request
// holds (0 for none).
func (v *vm) tid() int {
	if !v.rt.hasThreads() {
		return v.ord
	}
	if v.st != nil {
		if t, ok := v.st.Script.VM.(*vm); ok {
			return t.ord
		}
	}
	return v.ord
}

func (rt *Runtime) hasThreads() bool { return len(rt.threads) > 0 }

// logf is pound.log: syslog priorities map to log levels.
func (rt *Runtime) logf(prio int64, msg []byte) {
	s := string(msg)
	switch {
	case prio <= 3: // EMERG, ALERT, CRIT, ERR
		rt.log.Error(s)
	case prio == 4:
		rt.log.Warn(s)
	case prio <= 6:
		rt.log.Info(s)
	default:
		rt.log.Debug(s)
	}
}

// reasonOf is the standard reason phrase of a status.
func reasonOf(code int) string { return http.StatusText(code) }

// parseStatus is Pound's check of http.resp.code: the decimal string
// form of an integer from 100 to 599.
func parseStatus(b []byte) (int, bool) {
	if len(b) != 3 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n >= 100 && n <= 599
}
