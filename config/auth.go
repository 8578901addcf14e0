package config

import (
	"errors"
	"io/fs"
	"math/bits"
	"strconv"
	"strings"

	"lbd/htpasswd"
	"lbd/parser"
	"lbd/tbf"
)

// BasicAuth and TBF: the conditions of Pound's Authentication and
// Rate-limiting chapters.

// condBasicAuth is BasicAuth [-file|-filewatch] "FILE". Without a flag
// the file is followed, as in Pound; -file reads it once, and then a
// missing file is an error.
func condBasicAuth(b *builder, c *condCtx, n *parser.Node, u []unit) {
	var name *parser.Arg
	watch := true
	for i := range u {
		switch {
		case u[i].code == 'f':
			name, watch = u[i].val, u[i].arg.Text[1:] == "filewatch"
		case name != nil:
			b.errorf(u[i].arg.Span, "superfluous arguments")
			return
		default:
			name = &u[i].arg
		}
	}
	if name == nil {
		b.errorf(stmtSpan(n), "required argument missing")
		return
	}
	pf := &PasswordFile{Path: b.resolve(name.Text), Watch: watch}
	if watch {
		b.watch(pf.Path, *name, func(data []byte) error {
			pf.Set(htpasswd.Parse(data))
			return nil
		})
	} else {
		data, err := b.readRegular(pf.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			b.errorf(name.Span, "file %s does not exist", name.Text)
			return
		case err != nil:
			b.errorf(name.Span, "can't open %s: %s", name.Text, parser.ErrText(err))
			return
		}
		pf.Set(htpasswd.Parse(data))
	}
	*c.conds = append(*c.conds, newCond(Condition{Kind: CondBasicAuth}, ConditionRare{Auth: pf}))
}

// condTBF is TBF "KEY" RATE BURST.
func condTBF(b *builder, c *condCtx, _ *parser.Node, u []unit) {
	interval, ok := b.tbfRate(u[1].arg)
	if !ok {
		return
	}
	burst, ok := b.intArg(u[2].arg, 0, maxUint)
	if !ok {
		return
	}
	if burst == 0 {
		b.warnf(u[2].arg.Span, "a burst of 0 makes every request fail (Pound answers 500)")
	}
	t := &TBF{Key: u[0].arg.Text, Interval: interval, Burst: uint32(burst)}
	t.Limiter = tbf.New(t.Interval, t.Burst)
	*c.conds = append(*c.conds, newCond(Condition{Kind: CondTBF}, ConditionRare{TBF: t}))
}

// tbfUnits are the interval units of a rate, in nanoseconds.
var tbfUnits = map[string]uint64{"s": 1e9, "ms": 1e6, "us": 1e3}

// tbfRate reads a rate as Pound does: N (per second) or N/[M]UNIT (N per
// M units; the unit is required after the slash), and returns the time
// per token in nanoseconds. Messages are Pound's.
func (b *builder) tbfRate(a parser.Arg) (uint64, bool) {
	count, rest := leadingUint(a.Text)
	per, unit := uint64(1), "s"
	switch {
	case count == 0:
		b.errorf(a.Span, "bad unsigned number")
		return 0, false
	case strings.HasPrefix(rest, "/"):
		rest = rest[1:]
		if rest != "" && isDigitByte(rest[0]) {
			if per, rest = leadingUint(rest); per == 0 {
				b.errorf(a.Span, "bad interval specifier")
				return 0, false
			}
		}
		unit = strings.ToLower(rest)
		if _, ok := tbfUnits[unit]; !ok {
			b.errorf(a.Span, "bad interval specifier")
			return 0, false
		}
	case rest != "":
		b.errorf(a.Span, "invalid rate")
		return 0, false
	}
	hi, lo := bits.Mul64(per, tbfUnits[unit])
	if hi >= count {
		b.errorf(a.Span, "effective rate is out of range")
		return 0, false
	}
	// The remainder is dropped: the interval rounds down, as Pound's
	// integer division does (hi < count was checked, so Div64 cannot panic).
	interval, _ := bits.Div64(hi, lo, count)
	if interval == 0 {
		b.errorf(a.Span, "effective rate is 0")
		return 0, false
	}
	return interval, true
}

// leadingUint parses the decimal digits at the start of s; an empty or
// overflowing number is 0 (Pound's strtoul checks treat both as bad).
func leadingUint(s string) (uint64, string) {
	i := 0
	for i < len(s) && isDigitByte(s[i]) {
		i++
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil {
		return 0, s[i:]
	}
	return n, s[i:]
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }
