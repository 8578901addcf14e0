package config

import (
	"math"
	"strconv"
	"strings"
	"time"

	"lbd/parser"
)

// Value conversions for already type-checked arguments, with Pound 4's
// range messages ("value out of range [MIN..MAX]", "bad duration",
// "unrecognized size suffix").

// Duration is a time.Duration that marshals as seconds in JSON.
type Duration time.Duration

// Seconds builds a Duration from whole seconds.
func Seconds(n int64) Duration { return Duration(time.Duration(n) * time.Second) }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a number of seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}

// boolArg converts a 'b' argument.
func boolArg(u unit) bool {
	if u.code == 'n' {
		return u.arg.Text == "1"
	}
	return boolWords[strings.ToLower(u.arg.Text)]
}

// intArg converts a number argument and checks it lies in [lo..hi].
func (b *builder) intArg(a parser.Arg, lo, hi int64) (int64, bool) {
	n, err := strconv.ParseUint(a.Text, 10, 64)
	if err != nil || n > math.MaxInt64 || int64(n) < lo || int64(n) > hi {
		b.errorf(a.Span, "value out of range [%d..%d]", lo, hi)
		return 0, false
	}
	return int64(n), true
}

// maxUint is Pound's UINT_MAX bound for counts and durations.
const maxUint = math.MaxUint32

// maxInt is Pound's INT_MAX bound for plain integers.
const maxInt = math.MaxInt32

// durationArg converts a number (seconds, >= 1) or a literal such as 1m20s
// (units s, m, h, d; a trailing bare number is seconds).
func (b *builder) durationArg(a parser.Arg) (Duration, bool) {
	if a.Kind == parser.Number {
		n, ok := b.intArg(a, 1, maxUint)
		return Seconds(n), ok
	}
	var total uint64
	s := a.Text
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		n, err := strconv.ParseUint(s[:i], 10, 32)
		if i == 0 || err != nil {
			b.errorf(a.Span, "bad duration")
			return 0, false
		}
		mult := uint64(1)
		if i < len(s) {
			switch s[i] {
			case 's':
			case 'm':
				mult = 60
			case 'h':
				mult = 3600
			case 'd':
				mult = 86400
			default:
				b.errorf(a.Span, "bad duration")
				return 0, false
			}
			i++
		}
		total += n * mult
		if total > maxUint {
			b.errorf(a.Span, "bad duration")
			return 0, false
		}
		s = s[i:]
	}
	return Seconds(int64(total)), true
}

// sizeArg converts a number or a literal with a k, m or g suffix (powers
// of 1024) and checks the result against max.
func (b *builder) sizeArg(a parser.Arg, max uint64) (int64, bool) {
	s := a.Text
	mult := uint64(1)
	if a.Kind != parser.Number && s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		default:
			b.errorf(a.Span, "unrecognized size suffix")
			return 0, false
		}
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		if strings.Trim(s, "0123456789") != "" || s == "" {
			b.errorf(a.Span, "unrecognized size suffix")
			return 0, false
		}
		n = math.MaxUint64
	}
	if n > max/mult {
		b.errorf(a.Span, "value out of range [0..%d]", max)
		return 0, false
	}
	return int64(n * mult), true
}
