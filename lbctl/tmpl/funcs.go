package tmpl

import (
	"fmt"
	"math"
	"strings"
)

// function is a template function; its arguments are evaluated first.
type function func(args []any) (any, error)

// functions are poundctl's (poundctl.tmpl(5)).
var functions map[string]function

func init() {
	functions = map[string]function{
		"and":    andOr("and", false),
		"or":     andOr("or", true),
		"not":    fnNot,
		"index":  fnIndex,
		"len":    fnLen,
		"eq":     compare("eq", func(c int) bool { return c == 0 }),
		"ne":     compare("ne", func(c int) bool { return c != 0 }),
		"lt":     compare("lt", func(c int) bool { return c < 0 }),
		"le":     compare("le", func(c int) bool { return c <= 0 }),
		"gt":     compare("gt", func(c int) bool { return c > 0 }),
		"ge":     compare("ge", func(c int) bool { return c >= 0 }),
		"even":   fnEven,
		"printf": printf,
		"typeof": fnTypeof,
		"exists": fnExists,
		"add":    fold("add", func(a, b float64) float64 { return a + b }),
		"sub":    fold("sub", func(a, b float64) float64 { return a - b }),
		"mul":    fold("mul", func(a, b float64) float64 { return a * b }),
		"fdiv":   binary("fdiv", func(a, b float64) float64 { return a / b }),
		"div":    binary("div", func(a, b float64) float64 { return math.Trunc(a / b) }),
		"mod":    binary("mod", math.Mod),
		"int":    unary("int", math.Floor),
		"fraq":   unary("fraq", func(a float64) float64 { _, f := math.Modf(a); return f }),
	}
}

func argCount(name string, args []any, n int) error {
	switch {
	case len(args) < n:
		return fmt.Errorf("not enough arguments for %s", name)
	case len(args) > n:
		return fmt.Errorf("too many arguments for %s", name)
	}
	return nil
}

// andOr returns the first argument that is false (and) or true (or), or
// else the last one.
func andOr(name string, want bool) function {
	return func(args []any) (any, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("not enough arguments for %s", name)
		}
		for _, a := range args {
			if truth(a) == want {
				return a, nil
			}
		}
		return args[len(args)-1], nil
	}
}

func fnNot(args []any) (any, error) {
	if err := argCount("not", args, 1); err != nil {
		return nil, err
	}
	return !truth(args[0]), nil
}

// fnIndex takes elements and members in turn: "index . "a" 1" is .a[1].
func fnIndex(args []any) (any, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("not enough arguments for index")
	}
	v := args[0]
	for _, k := range args[1:] {
		switch x := v.(type) {
		case []any:
			i := toInteger(k)
			if i < 0 || i >= int64(len(x)) {
				return nil, fmt.Errorf("index %d out of range (length %d)", i, len(x))
			}
			v = x[i]
		case map[string]any:
			name := toString(k)
			m, ok := x[name]
			if !ok {
				return nil, fmt.Errorf("no such attribute: %s", name)
			}
			v = m
		default:
			return nil, fmt.Errorf("%s can't be indexed", typeName(v))
		}
	}
	return v, nil
}

// fnLen is the length of a string, array or object, 0 for null, and the
// length of the printed form of a boolean or a number.
func fnLen(args []any) (any, error) {
	if err := argCount("len", args, 1); err != nil {
		return nil, err
	}
	switch x := args[0].(type) {
	case []any:
		return int64(len(x)), nil
	case map[string]any:
		return int64(len(x)), nil
	}
	return int64(len(toString(args[0]))), nil
}

// cmpValues orders two values of comparable types: null with null,
// booleans (false first), numbers (as integers when either is one, as
// Pound compares them) and strings (bytewise).
func cmpValues(a, b any) (int, error) {
	order := func(less, greater bool) int {
		switch {
		case less:
			return -1
		case greater:
			return 1
		}
		return 0
	}
	switch x := a.(type) {
	case nil:
		if b == nil {
			return 0, nil
		}
	case bool:
		if y, ok := b.(bool); ok {
			return order(!x && y, x && !y), nil
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	case float64, int64:
		y, ok := numeric(b)
		if !ok {
			break
		}
		xf, _ := numeric(a) // a is a number: this case
		_, ai := a.(int64)
		_, bi := b.(int64)
		if ai || bi {
			return order(int64(xf) < int64(y), int64(xf) > int64(y)), nil
		}
		return order(xf < y, xf > y), nil
	}
	return 0, fmt.Errorf("%s and %s are not comparable", typeName(a), typeName(b))
}

func compare(name string, ok func(int) bool) function {
	return func(args []any) (any, error) {
		if err := argCount(name, args, 2); err != nil {
			return nil, err
		}
		c, err := cmpValues(args[0], args[1])
		if err != nil {
			return nil, err
		}
		return ok(c), nil
	}
}

func fnEven(args []any) (any, error) {
	if err := argCount("even", args, 1); err != nil {
		return nil, err
	}
	return toInteger(args[0])%2 == 0, nil
}

func fnTypeof(args []any) (any, error) {
	if err := argCount("typeof", args, 1); err != nil {
		return nil, err
	}
	return typeName(args[0]), nil
}

// fnExists reports whether an object has a member; for anything else it
// is false.
func fnExists(args []any) (any, error) {
	if err := argCount("exists", args, 2); err != nil {
		return nil, err
	}
	m, ok := args[0].(map[string]any)
	k, isStr := args[1].(string)
	if !ok || !isStr {
		return false, nil
	}
	_, ok = m[k]
	return ok, nil
}

// numArg returns argument i (from 0) as a real, or an error naming it
// from 1 as Pound does.
func numArg(name string, args []any, i int) (float64, error) {
	f, ok := numeric(args[i])
	if !ok {
		return 0, fmt.Errorf("bad type of argument %d to %s", i+1, name)
	}
	return f, nil
}

// fold applies op to one or more numbers, left to right; the result is a
// real.
func fold(name string, op func(a, b float64) float64) function {
	return func(args []any) (any, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("not enough arguments for %s", name)
		}
		acc, err := numArg(name, args, 0)
		if err != nil {
			return nil, err
		}
		for i := 1; i < len(args); i++ {
			n, err := numArg(name, args, i)
			if err != nil {
				return nil, err
			}
			acc = op(acc, n)
		}
		return acc, nil
	}
}

func binary(name string, op func(a, b float64) float64) function {
	return func(args []any) (any, error) {
		if err := argCount(name, args, 2); err != nil {
			return nil, err
		}
		a, err := numArg(name, args, 0)
		if err != nil {
			return nil, err
		}
		b, err := numArg(name, args, 1)
		if err != nil {
			return nil, err
		}
		return op(a, b), nil
	}
}

func unary(name string, op func(a float64) float64) function {
	return func(args []any) (any, error) {
		if err := argCount(name, args, 1); err != nil {
			return nil, err
		}
		a, err := numArg(name, args, 0)
		if err != nil {
			return nil, err
		}
		return op(a), nil
	}
}
