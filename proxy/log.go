package proxy

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"lbd/config"
	"lbd/http1"
)

// LogFormat is a Pound request log format number (LogLevel).
type LogFormat int

// The built-in Pound 4 formats (LogLevel 0..5).
const (
	LogNull LogFormat = iota
	LogRegular
	LogExtended
	LogVhostCombined
	LogCombined
	LogDetailed
)

// AccessLog writes one line per request, byte for byte as Pound 4 does
// (src/log.c). Lines are formatted into a pooled buffer and written with
// one Write, so logging allocates nothing per request and lines from
// concurrent connections never interleave.
type AccessLog struct {
	// Format is the canned format used when Prog is nil.
	Format LogFormat
	// Prog is a LogFormat definition; it overrides Format.
	Prog *LogProgram
	// Out receives one Write per line (stdout with -e, or syslog).
	Out io.Writer
	// Anonymise zeroes the last byte of the client address in %a.
	Anonymise bool
	// Prefix is written before every line ("pound: " on stderr).
	Prefix string

	now func() time.Time // the log clock; tests pin it
	// failing is set while writes to Out fail, so a full disk or a dead
	// syslog is reported once per outage rather than once per request.
	failing atomic.Bool
}

func (l *AccessLog) program() *LogProgram {
	if l.Prog != nil {
		return l.Prog
	}
	return BuiltinLogProgram(l.Format)
}

func (l *AccessLog) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

var logPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// pid stands in for Pound's thread id (%P): goroutines have none.
var pid = os.Getpid()

// logRequest writes the access log line of the exchange that just ended.
func (c *conn) logRequest(st *Listener) {
	if c.ex.logged {
		return
	}
	c.ex.logged = true
	c.record()
	l := st.Log
	if l == nil || l.Out == nil {
		return
	}
	if cls := c.ex.status / 100; cls >= 1 && cls <= 5 && c.rs.LogSuppress&(1<<cls) != 0 {
		return // LogSuppress of a service the request matched
	}
	p := l.program()
	if len(p.ops) == 0 {
		return // the null format logs nothing, as in Pound
	}
	bp := logPool.Get().(*[]byte)
	b := append((*bp)[:0], l.Prefix...)
	b = c.appendLogLine(st, p, b, l.clock())
	b = append(b, '\n')
	if _, err := l.Out.Write(b); err != nil {
		if !l.failing.Swap(true) {
			st.diag(fmt.Errorf("access log: %w (further failures are not reported until a line is written)", err))
		}
	} else if l.failing.Load() {
		l.failing.Store(false)
	}
	*bp = b[:0]
	logPool.Put(bp)
}

// logGenerated logs a request refused before it was fully parsed. The
// exchange starts afresh: nothing of the previous request on the
// connection (service, backend) belongs to this line.
func (c *conn) logGenerated(st *Listener, status int) {
	c.ex = exchange{start: c.now, status: status, gen: true, respExtra: c.ex.respExtra[:0]}
	c.logRequest(st)
}

// appendLogLine runs the program for the current exchange.
func (c *conn) appendLogLine(st *Listener, p *LogProgram, b []byte, now time.Time) []byte {
	for i := range p.ops {
		b = c.appendLogOp(st, &p.ops[i], b, now)
	}
	return b
}

func (c *conn) appendLogOp(st *Listener, op *logOp, b []byte, now time.Time) []byte {
	switch op.kind {
	case lkText:
		return append(b, op.text...)
	case lkForwardedIP:
		return appendIP(b, c.originIP(st), st.Log.Anonymise)
	case lkRemoteIP:
		return c.appendClientAddr(b, false)
	case lkLocalIP:
		return c.appendListenerIP(st, b)
	case lkPort:
		return strconv.AppendInt(b, int64(c.listenerPort(st)), 10)
	case lkProto:
		return append(b, st.Scheme...)
	case lkBytes:
		return strconv.AppendInt(b, c.logBytes(st), 10)
	case lkBytesCLF:
		if n := c.logBytes(st); n > 0 {
			return strconv.AppendInt(b, n, 10)
		}
		return append(b, '-')
	case lkHeader, lkHeaderCLF:
		v, ok := c.reqHeader(op.text)
		if !ok && op.kind == lkHeaderCLF {
			return append(b, '-')
		}
		return append(b, v...)
	case lkMethod:
		return append(b, c.req.Method...)
	case lkPID:
		return strconv.AppendInt(b, int64(pid), 10)
	case lkRequest:
		return c.appendRequestLine(b)
	case lkStatus:
		return pad(b, c.ex.status, 3, ' ')
	case lkStatusLine:
		return c.appendStatusLine(b)
	case lkUser:
		return c.appendUser(b)
	case lkPath, lkQuery:
		return c.appendPathQuery(b, op.kind == lkQuery)
	case lkVHost:
		return c.appendVHost(st, b)
	case lkWAF:
		return c.appendWAFVerdict(b)
	case lkGRPC:
		if c.ex.grpcStatus == 0 {
			return append(b, '-')
		}
		return strconv.AppendInt(b, int64(c.ex.grpcStatus-1), 10)
	}
	if op.kind >= lkBackendName && op.kind <= lkListenerLocus {
		return c.appendObject(st, op.kind, b)
	}
	return c.appendLogTime(op, b, now)
}

// appendLogTime handles the %t and %T families.
func (c *conn) appendLogTime(op *logOp, b []byte, now time.Time) []byte {
	t := c.ex.start
	if op.end {
		t = now
	}
	d := now.Sub(c.ex.start)
	switch op.kind {
	case lkTimeCLF:
		return appendCLFTime(b, t)
	case lkTimeFmt:
		return appendStrftime(b, t, op.tf)
	case lkTimeSec:
		return strconv.AppendInt(b, t.Unix(), 10)
	case lkTimeMsec:
		return strconv.AppendInt(b, t.UnixMilli(), 10)
	case lkTimeUsec:
		return strconv.AppendInt(b, t.UnixMicro(), 10)
	case lkTimeMsecFrac:
		return pad(b, t.Nanosecond()/1e6, 3, '0')
	case lkTimeUsecFrac:
		return pad(b, t.Nanosecond()/1e3, 6, '0')
	case lkProcSec:
		return strconv.AppendInt(b, int64(d/time.Second), 10)
	case lkProcFrac:
		return appendSeconds(b, d)
	case lkProcMs, lkMillis:
		return strconv.AppendInt(b, d.Milliseconds(), 10)
	case lkProcUs:
		return strconv.AppendInt(b, d.Microseconds(), 10)
	}
	return b
}

// appendStatusLine is %>s: the backend's status line as received, or for
// a reply lbd generated "CODE REASON", with "-" where Pound's status
// table has no reason (redirects): "301 -".
func (c *conn) appendStatusLine(b []byte) []byte {
	if !c.ex.gen && c.ex.status != 0 && c.resp.Status == c.ex.status {
		b = append(b, "HTTP/1."...)
		b = append(b, byte('0'+c.resp.Minor), ' ')
		b = strconv.AppendInt(b, int64(c.resp.Status), 10)
		if len(c.resp.Reason) > 0 {
			b = append(b, ' ')
			b = append(b, c.resp.Reason...)
		}
		return b
	}
	b = pad(b, c.ex.status, 3, ' ')
	b = append(b, ' ')
	return append(b, logReason(c.ex.status)...)
}

// logReason is the reason Pound prints for a generated reply: its own
// table's (src/http.c http_status[]) or "-"; statuses only lbd generates
// (502, 504 ...) keep their error page's reason.
func logReason(status int) string {
	switch status {
	case 200, 400, 401, 403, 404, 405, 413, 414, 429, 500, 501, 503:
		return statusText[status][0]
	}
	if t, ok := statusText[status]; ok && status >= 400 {
		return t[0]
	}
	return "-"
}

// logBytes is Pound's res_bytes: body bytes relayed, or the length of
// the generated error page; redirects count none.
func (c *conn) logBytes(st *Listener) int64 {
	if !c.ex.gen {
		return c.ex.bytes
	}
	status := c.ex.status
	switch {
	case status >= 400:
		if s := c.ex.svc; s != nil && s.Special != nil && s.Special.Kind == config.BackendError &&
			s.Special.Rare().Status == status && s.Special.Rare().Page != nil {
			body := s.Special.Rare().Page.Body
			if st.Dialect != config.DialectZproxy {
				_, body = splitErrorFile(body)
			}
			return int64(len(body))
		}
		if st.Errors != nil {
			return int64(st.Errors.bodyLen(status, c.ex.cause))
		}
	case status >= 300:
		return 0
	}
	return c.ex.bytes
}

// appendClientAddr prints the client as Pound's addr2str does: IPv6 in
// brackets, "socket" for a UNIX client; Anonymise zeroes what follows
// the last '.' or ':' (anon_ip, including its "[::0" for IPv6).
func (c *conn) appendClientAddr(b []byte, anon bool) []byte {
	return appendIP(b, c.client, anon)
}

// originIP is the request's originator: the address the forwarded
// header names past the trusted proxies (TrustedIP of the service, else
// the listener's, else the global one), or the peer.
func (c *conn) originIP(st *Listener) netip.Addr {
	// Only a routed request has its headers in c.rs; a malformed one is
	// logged with the peer, as in Pound.
	if c.ex.svc == nil || c.ex.svc.Env == nil {
		return c.client
	}
	return c.rs.RemoteIP(c.ex.svc.Env, true)
}

// appendIP prints a as Pound's addr2str does.
func appendIP(b []byte, a netip.Addr, anon bool) []byte {
	if !a.IsValid() {
		return append(b, "socket"...)
	}
	start := len(b)
	if a.Is6() {
		b = append(b, '[')
		b = a.AppendTo(b)
		b = append(b, ']')
	} else {
		b = a.AppendTo(b)
	}
	if !anon {
		return b
	}
	for i := len(b) - 1; i >= start; i-- {
		if b[i] == '.' || b[i] == ':' {
			return append(b[:i+1], '0')
		}
	}
	return b
}

// reqHeader returns the value of the first request header named name.
func (c *conn) reqHeader(name string) ([]byte, bool) {
	for i := range c.req.Headers {
		if h := &c.req.Headers[i]; http1.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return nil, false
}

// record adds the finished exchange to the listener's and its service's
// lbd_* metrics. logRequest calls it, once per exchange, whether or not
// a log line is written; it only adds to atomics (no allocation).
func (c *conn) record() {
	d := time.Since(c.ex.start)
	c.srv.requests.Observe(c.ex.status, d)
	if c.ex.grpcStatus > 0 {
		c.srv.countGRPC(c.ex.grpcStatus - 1)
	}
	if c.ex.svc != nil && c.ex.svc.Stats != nil {
		c.ex.svc.Stats.Observe(c.ex.status, d)
	}
}
