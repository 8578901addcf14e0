package proxy

import (
	"strconv"
	"time"
)

// timePart is one piece of a compiled strftime(3) format: a literal or
// a conversion. Formats are compiled at load so that printing a time is
// a few integer appends, without time.Format's layout parsing.
type timePart struct {
	conv byte // 0 for literal
	lit  string
}

// compileStrftime splits a strftime format into parts. Conversions lbd
// does not know are kept verbatim, as glibc does.
func compileStrftime(f string) []timePart {
	var parts []timePart
	lit := func(s string) {
		if n := len(parts); n > 0 && parts[n-1].conv == 0 {
			parts[n-1].lit += s
			return
		}
		parts = append(parts, timePart{lit: s})
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			lit(f[i : i+1])
			continue
		}
		i++
		switch c := f[i]; c {
		case '%':
			lit("%")
		case 'n':
			lit("\n")
		case 't':
			lit("\t")
		case 'a', 'A', 'b', 'h', 'B', 'd', 'e', 'H', 'I', 'j', 'm', 'M', 'p',
			'S', 'y', 'Y', 'z', 'Z', 's', 'u', 'w', 'C', 'k', 'l':
			parts = append(parts, timePart{conv: c})
		case 'T':
			parts = append(parts, timePart{conv: 'H'}, timePart{lit: ":"}, timePart{conv: 'M'},
				timePart{lit: ":"}, timePart{conv: 'S'})
		case 'R':
			parts = append(parts, timePart{conv: 'H'}, timePart{lit: ":"}, timePart{conv: 'M'})
		case 'D':
			parts = append(parts, timePart{conv: 'm'}, timePart{lit: "/"}, timePart{conv: 'd'},
				timePart{lit: "/"}, timePart{conv: 'y'})
		case 'F':
			parts = append(parts, timePart{conv: 'Y'}, timePart{lit: "-"}, timePart{conv: 'm'},
				timePart{lit: "-"}, timePart{conv: 'd'})
		default:
			lit(f[i-1 : i+1])
		}
	}
	return parts
}

var (
	shortDays   = [...]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	longDays    = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	shortMonths = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	longMonths  = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
)

// appendStrftime formats t (already in local time) by parts.
func appendStrftime(b []byte, t time.Time, parts []timePart) []byte {
	for _, p := range parts {
		if p.conv == 0 {
			b = append(b, p.lit...)
			continue
		}
		b = appendConv(b, t, p.conv)
	}
	return b
}

func appendConv(b []byte, t time.Time, c byte) []byte {
	switch c {
	case 'a':
		return append(b, shortDays[t.Weekday()]...)
	case 'A':
		return append(b, longDays[t.Weekday()]...)
	case 'b', 'h':
		return append(b, shortMonths[t.Month()-1]...)
	case 'B':
		return append(b, longMonths[t.Month()-1]...)
	case 'd':
		return pad(b, t.Day(), 2, '0')
	case 'e':
		return pad(b, t.Day(), 2, ' ')
	case 'H':
		return pad(b, t.Hour(), 2, '0')
	case 'k':
		return pad(b, t.Hour(), 2, ' ')
	case 'I':
		return pad(b, hour12(t), 2, '0')
	case 'l':
		return pad(b, hour12(t), 2, ' ')
	case 'j':
		return pad(b, t.YearDay(), 3, '0')
	case 'm':
		return pad(b, int(t.Month()), 2, '0')
	case 'M':
		return pad(b, t.Minute(), 2, '0')
	case 'S':
		return pad(b, t.Second(), 2, '0')
	case 'p':
		if t.Hour() < 12 {
			return append(b, "AM"...)
		}
		return append(b, "PM"...)
	case 'y':
		return pad(b, t.Year()%100, 2, '0')
	case 'C':
		return pad(b, t.Year()/100, 2, '0')
	case 'Y':
		return strconv.AppendInt(b, int64(t.Year()), 10)
	case 'z':
		return appendZone(b, t)
	case 'Z':
		name, _ := t.Zone()
		return append(b, name...)
	case 's':
		return strconv.AppendInt(b, t.Unix(), 10)
	case 'u':
		return strconv.AppendInt(b, int64((int(t.Weekday())+6)%7+1), 10)
	case 'w':
		return strconv.AppendInt(b, int64(t.Weekday()), 10)
	}
	return b
}

func hour12(t time.Time) int {
	h := t.Hour() % 12
	if h == 0 {
		h = 12
	}
	return h
}

// pad appends n right-aligned in width w, filled with fill.
func pad(b []byte, n, w int, fill byte) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(n), 10)
	for i := len(s); i < w; i++ {
		b = append(b, fill)
	}
	return append(b, s...)
}

// appendZone appends the numeric zone offset, +hhmm or -hhmm.
func appendZone(b []byte, t time.Time) []byte {
	_, off := t.Zone()
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	b = append(b, sign)
	b = pad(b, off/3600, 2, '0')
	return pad(b, off%3600/60, 2, '0')
}

// appendCLFTime appends Apache's [02/Jan/2006:15:04:05 -0700]. Date and
// Clock are taken once each: every accessor of time.Time recomputes the
// calendar date.
func appendCLFTime(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	hour, min, sec := t.Clock()
	b = append(b, '[')
	b = pad(b, day, 2, '0')
	b = append(b, '/')
	b = append(b, shortMonths[month-1]...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(year), 10)
	b = append(b, ':')
	b = pad(b, hour, 2, '0')
	b = append(b, ':')
	b = pad(b, min, 2, '0')
	b = append(b, ':')
	b = pad(b, sec, 2, '0')
	b = append(b, ' ')
	b = appendZone(b, t)
	return append(b, ']')
}

// appendSeconds formats d as Pound's %{f}T: seconds, a dot and three
// decimals of milliseconds, truncated.
func appendSeconds(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	ms := d.Milliseconds()
	b = strconv.AppendInt(b, ms/1000, 10)
	b = append(b, '.')
	return pad(b, int(ms%1000), 3, '0')
}
