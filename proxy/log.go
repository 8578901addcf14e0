package proxy

import (
	"io"
	"strconv"
	"sync"
	"time"
)

// LogFormat is a Pound request log format.
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

// AccessLog writes one line per request. Lines are formatted into a pooled
// buffer and written with one Write, so logging allocates nothing per
// request and lines from concurrent connections never interleave.
type AccessLog struct {
	Format    LogFormat
	Out       io.Writer
	Anonymise bool
	// Prefix is written before every line ("pound: " on stderr).
	Prefix string
}

var logPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (c *conn) logRequest(st *Listener) {
	l := st.Log
	if l == nil || l.Format == LogNull {
		return
	}
	bp := logPool.Get().(*[]byte)
	b := append((*bp)[:0], l.Prefix...)
	b = c.appendLogLine(l, b)
	b = append(b, '\n')
	l.Out.Write(b)
	*bp = b
	logPool.Put(bp)
}

// logGenerated logs a request refused before it was fully parsed.
func (c *conn) logGenerated(st *Listener, status int) {
	c.ex.status, c.ex.gen = status, true
	c.logRequest(st)
}

func (c *conn) appendLogLine(l *AccessLog, b []byte) []byte {
	b = c.appendClient(l, b)
	b = append(b, ' ')
	b = append(b, c.req.Method...)
	b = append(b, ' ')
	b = append(b, c.req.Target...)
	b = append(b, " HTTP/1."...)
	b = append(b, byte('0'+c.req.Minor))
	b = append(b, " - "...)
	b = c.appendStatus(b)
	if l.Format >= LogExtended {
		b = append(b, " ("...)
		b = append(b, c.req.Host...)
		b = append(b, '/')
		if c.ex.svc != nil && c.ex.svc.Name != "" {
			b = append(b, c.ex.svc.Name...)
		} else {
			b = append(b, '-')
		}
		b = append(b, " -> "...)
		if c.ex.be != nil {
			b = append(b, c.ex.be.Address()...)
		} else {
			b = append(b, '-')
		}
		b = append(b, ") "...)
		b = appendSeconds(b, time.Since(c.ex.start))
		b = append(b, " sec"...)
	}
	return b
}

func (c *conn) appendStatus(b []byte) []byte {
	if c.ex.gen {
		b = strconv.AppendInt(b, int64(c.ex.status), 10)
		return append(b, " -"...)
	}
	b = append(b, "HTTP/1."...)
	b = append(b, byte('0'+c.resp.Minor))
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(c.ex.status), 10)
	b = append(b, ' ')
	return append(b, c.resp.Reason...)
}

func (c *conn) appendClient(l *AccessLog, b []byte) []byte {
	if !l.Anonymise || !c.client.Is4() {
		return c.client.AppendTo(b)
	}
	a := c.client.As4()
	a[3] = 0
	for i, x := range a {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return b
}

// appendSeconds formats d as Pound does: seconds with three decimals.
func appendSeconds(b []byte, d time.Duration) []byte {
	ms := d.Milliseconds()
	b = strconv.AppendInt(b, ms/1000, 10)
	b = append(b, '.')
	frac := ms % 1000
	b = append(b, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}
