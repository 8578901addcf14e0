package tmpl

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// spec is one conversion of a printf format.
type spec struct {
	alt, zero, left, space, plus bool
	width, prec                  int
	hasPrec                      bool
}

// printf formats as C's printf does, with poundctl's conversions: s (any
// value, as a string), d i u x X o (integers; a real is truncated), e E f
// F g G (numbers), v (any value as JSON) and %%. Arguments may be taken
// by position (%2$s), widths and precisions from arguments (%*d, %.*f).
// An unknown conversion is copied as it is.
func printf(args []any) (any, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("not enough arguments for printf")
	}
	format, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("printf format is not string")
	}
	f := &formatter{args: args[1:]}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		end, err := f.conversion(&b, format, i+1)
		if err != nil {
			return nil, err
		}
		i = end
	}
	return b.String(), nil
}

type formatter struct {
	args []any
	next int // the next argument taken in order, from 0
}

// arg returns argument n (from 1), or the next one when n is 0.
func (f *formatter) arg(n int) (any, error) {
	if n == 0 {
		f.next++
		n = f.next
	}
	if n > len(f.args) {
		return nil, fmt.Errorf("not enough arguments in call to printf: argument %d requested by format string", n)
	}
	return f.args[n-1], nil
}

// position reads "N$" at i; it returns N (0 when there is none) and the
// offset after it.
func position(format string, i int) (int, int) {
	j := i
	for j < len(format) && isDigit(format[j]) {
		j++
	}
	if j > i && j < len(format) && format[j] == '$' {
		n, err := strconv.Atoi(format[i:j])
		if err == nil {
			return n, j + 1
		}
	}
	return 0, i
}

// number reads decimal digits at i.
func number(format string, i int) (int, int) {
	n := 0
	for i < len(format) && isDigit(format[i]) {
		n = n*10 + int(format[i]-'0')
		i++
	}
	return n, i
}

// starArg reads the argument of a '*' (after it, at i): an integer.
func (f *formatter) starArg(format string, i int) (int, int, error) {
	pos, i := position(format, i)
	v, err := f.arg(pos)
	if err != nil {
		return 0, i, err
	}
	n, ok := numeric(v)
	if !ok {
		return 0, i, fmt.Errorf("argument type mismatch")
	}
	return int(n), i, nil
}

// conversion formats the conversion whose text starts at i (after '%')
// and returns the offset of its last character.
func (f *formatter) conversion(b *strings.Builder, format string, i int) (int, error) {
	start := i - 1
	if i < len(format) && format[i] == '%' {
		b.WriteByte('%')
		return i, nil
	}
	argPos, i := position(format, i)
	var s spec
	for ; i < len(format) && strings.IndexByte("#0- +", format[i]) >= 0; i++ {
		switch format[i] {
		case '#':
			s.alt = true
		case '0':
			s.zero = true
		case '-':
			s.left = true
		case ' ':
			s.space = true
		case '+':
			s.plus = true
		}
	}
	var err error
	if i < len(format) && format[i] == '*' {
		if s.width, i, err = f.starArg(format, i+1); err != nil {
			return i, err
		}
		if s.width < 0 { // a negative width is '-' and the width
			s.left, s.width = true, -s.width
		}
	} else {
		s.width, i = number(format, i)
	}
	if i < len(format) && format[i] == '.' {
		s.hasPrec = true
		if i+1 < len(format) && format[i+1] == '*' {
			if s.prec, i, err = f.starArg(format, i+2); err != nil {
				return i, err
			}
			s.prec = max(s.prec, 0)
		} else {
			s.prec, i = number(format, i+1)
		}
	}
	if i >= len(format) {
		b.WriteString(format[start:])
		return len(format) - 1, nil
	}
	return i, f.convert(b, format[i], format[start:i+1], argPos, s)
}

// convert formats one argument by conversion c.
func (f *formatter) convert(b *strings.Builder, c byte, text string, argPos int, s spec) error {
	if strings.IndexByte("sdiuxXoeEfFgGv", c) < 0 {
		b.WriteString(text)
		return nil
	}
	v, err := f.arg(argPos)
	if err != nil {
		return err
	}
	switch c {
	case 's':
		str := toString(v)
		if s.hasPrec && s.prec < len(str) {
			str = str[:s.prec]
		}
		b.WriteString(pad(str, s.width, s.left, false))
	case 'v':
		var j strings.Builder
		writeJSON(&j, v)
		b.WriteString(j.String())
	case 'd', 'i', 'u', 'x', 'X', 'o':
		n, ok := numeric(v)
		if !ok {
			return fmt.Errorf("argument type mismatch")
		}
		b.WriteString(formatInt(int64(n), c, s))
	default:
		n, ok := numeric(v)
		if !ok {
			return fmt.Errorf("argument type mismatch")
		}
		b.WriteString(formatFloat(n, c, s))
	}
	return nil
}

// pad fills s to width with spaces (or zeros after any sign or 0x).
func pad(s string, width int, left, zero bool) string {
	if len(s) >= width {
		return s
	}
	fill := strings.Repeat(" ", width-len(s))
	switch {
	case left:
		return s + fill
	case zero:
		lead := 0
		if len(s) > 0 && (s[0] == '-' || s[0] == '+' || s[0] == ' ') {
			lead = 1
		}
		if len(s) > lead+1 && s[lead] == '0' && (s[lead+1] == 'x' || s[lead+1] == 'X') {
			lead += 2
		}
		return s[:lead] + strings.Repeat("0", width-len(s)) + s[lead:]
	}
	return fill + s
}

// zeroPad reports whether '0' pads: as in poundctl, a precision other
// than 0 turns it off for every conversion (C keeps it for reals), and
// so does '-'.
func (s spec) zeroPad() bool { return s.zero && s.prec == 0 && !s.left }

// formatInt is C's integer conversions: a precision is a minimum number
// of digits.
func formatInt(n int64, c byte, s spec) string {
	neg := n < 0 && (c == 'd' || c == 'i')
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	var digits string
	switch c {
	case 'x':
		digits = strconv.FormatUint(u, 16)
	case 'X':
		digits = strings.ToUpper(strconv.FormatUint(u, 16))
	case 'o':
		digits = strconv.FormatUint(u, 8)
	default:
		digits = strconv.FormatUint(u, 10)
	}
	if len(digits) < s.prec {
		digits = strings.Repeat("0", s.prec-len(digits)) + digits
	}
	prefix := ""
	switch {
	case s.alt && (c == 'x' || c == 'X') && u != 0:
		prefix = "0" + string(c)
	case s.alt && c == 'o' && !strings.HasPrefix(digits, "0"):
		prefix = "0"
	case c != 'd' && c != 'i':
	case neg:
		prefix = "-"
	case s.plus:
		prefix = "+"
	case s.space:
		prefix = " "
	}
	return pad(prefix+digits, s.width, s.left, s.zeroPad())
}

// formatFloat is C's e, f and g conversions (precision 6 by default).
func formatFloat(n float64, c byte, s spec) string {
	prec := 6
	if s.hasPrec {
		prec = s.prec
	}
	var str string
	switch {
	case math.IsInf(n, 0) || math.IsNaN(n):
		str = strings.TrimPrefix(formatReal(n), "-")
		if c == 'E' || c == 'F' || c == 'G' {
			str = strings.ToUpper(str)
		}
	case c == 'g' || c == 'G':
		str = formatG(math.Abs(n), prec, s.alt)
		if c == 'G' {
			str = strings.ToUpper(str)
		}
	default:
		str = strconv.FormatFloat(math.Abs(n), c|0x20, prec, 64)
		if c == 'E' || c == 'F' {
			str = strings.ToUpper(str)
		}
		if s.alt && prec == 0 && c|0x20 == 'f' {
			str += "."
		}
	}
	sign := ""
	switch {
	case math.Signbit(n) && !math.IsNaN(n):
		sign = "-"
	case s.plus:
		sign = "+"
	case s.space:
		sign = " "
	}
	finite := !math.IsInf(n, 0) && !math.IsNaN(n)
	return pad(sign+str, s.width, s.left, s.zeroPad() && finite)
}

// formatG is C's %g: %e when the exponent is below -4 or at least the
// precision, else %f, trailing zeros removed unless alt.
func formatG(n float64, prec int, alt bool) string {
	if prec == 0 {
		prec = 1
	}
	e := strconv.FormatFloat(n, 'e', prec-1, 64)
	exp, err := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if err != nil {
		return e // FormatFloat always writes a decimal exponent
	}
	var str string
	if exp < -4 || exp >= prec {
		str = e
	} else {
		str = strconv.FormatFloat(n, 'f', prec-1-exp, 64)
	}
	if alt {
		return str
	}
	mant, expPart, hasExp := strings.Cut(str, "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	if hasExp {
		return mant + "e" + expPart
	}
	return mant
}
