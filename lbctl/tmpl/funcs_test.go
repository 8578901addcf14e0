package tmpl

import "testing"

// TestFunctions checks each function, its conversions and its errors.
func TestFunctions(t *testing.T) {
	runCases(t, []execCase{
		{name: "and", text: `{{and 1 0 2}} {{and 1 2}}`, want: "0 2"},
		{name: "or", text: `{{or 0 "" 3}} [{{or 0 ""}}]`, want: "3 []"},
		{name: "not", text: `{{not 0}} {{not .s}}`, want: "true false"},
		{name: "len", text: `{{len .s}} {{len .list}} {{len .obj}} {{len .null}} {{len 123}} {{len true}} {{len false}}`, want: "3 3 2 0 3 4 0"},
		{name: "index", text: `{{index .list 1}} {{index .obj "b"}} {{index . "obj" "a" 1}} {{index .list "2"}}`, want: "20 B x 30"},
		{name: "index out of range", text: `{{index .list 5}}`, err: "index 5 out of range"},
		{name: "index missing member", text: `{{index .obj "zz"}}`, err: "no such attribute: zz"},
		{name: "index scalar", text: `{{index .s 0}}`, err: "string can't be indexed"},
		{name: "typeof", text: `{{typeof .s}} {{typeof .n}} {{typeof 1}} {{typeof .t}} {{typeof .null}} {{typeof .list}} {{typeof .obj}} {{typeof (len .s)}}`,
			want: "string number integer bool null array object integer"},
		{name: "exists", text: `{{exists . "null"}} {{exists . "zz"}} {{exists .list "a"}} {{exists . 1}}`, want: "true false false false"},
		{name: "even", text: `{{even 4}} {{even 3}} {{even .n}}`, want: "true false false"},
		{name: "eq of numbers compares integers", text: `{{eq 1 1.9}} {{eq .n 3}} {{eq .f 2.5}} {{eq .f 2}}`, want: "true true true true"},
		{name: "reals compare as reals", text: `{{eq .f .n}} {{lt .n .f}}`, want: "false false"},
		{name: "strings", text: `{{lt "a" "b"}} {{ne .s "x"}} {{ge "b" "b"}} {{gt "a" "b"}}`, want: "true true true false"},
		{name: "booleans", text: `{{eq .t true}} {{eq .t .z}} {{lt .z .t}}`, want: "true false true"},
		{name: "nulls", text: `{{eq .null .nope}} {{le .null .null}}`, want: "true true"},
		{name: "not comparable", text: `{{eq 1 "1"}}`, err: "integer and string are not comparable"},
		{name: "comparison arity", text: `{{eq 1}}`, err: "not enough arguments for eq"},
		{name: "comparison arity, too many", text: `{{eq 1 1 1}}`, err: "too many arguments for eq"},
		{name: "arithmetic gives reals", text: `{{add 1 2}} {{sub 10 3 2}} {{mul 2 3.5}} {{typeof (add 1 1)}}`, want: "3 5 6 number"},
		{name: "division", text: `{{printf "%.2f" (fdiv 7 2)}} {{div 7 2}} {{div -7 2}} {{mod 7 3}}`, want: "3.50 3 -3 1"},
		{name: "int and fraq", text: `{{int .neg}} {{printf "%.2f" (fraq .f)}}`, want: "-3 0.50"},
		{name: "division by zero", text: `{{fdiv 1 0}} {{fdiv -1 0}}`, want: "inf -inf"},
		{name: "arithmetic type", text: `{{add 1 "2"}}`, err: "bad type of argument 2 to add"},
		{name: "arithmetic arity", text: `{{add}}`, err: "not enough arguments for add"},
	})
}

// TestPrintf checks printf's conversions, flags, widths and precisions.
func TestPrintf(t *testing.T) {
	runCases(t, []execCase{
		{name: "strings", text: `{{printf "%5s|%-5s|%.2s|%s" "ab" "ab" "abc" .s}}`, want: "   ab|ab   |ab|str"},
		{name: "values as strings", text: `{{printf "[%s][%s][%s][%s][%s]" .n .t .z .null .list}}`, want: "[3][true][][][3]"},
		{name: "real as string is %g", text: `{{printf "%s %s %s" .f .big .e4}}`, want: "2.5 1.23457e+06 12345.7"},
		{name: "decimal", text: `{{printf "%d|%5d|%-5d|%05d|%+d|% d|%.3d|%d" 42 42 42 -42 42 42 7 .f}}`, want: "42|   42|42   |-0042|+42| 42|007|2"},
		{name: "hex and octal", text: `{{printf "%x|%X|%#x|%#08x|%o|%#o|%u" 255 255 255 255 8 8 7}}`, want: "ff|FF|0xff|0x0000ff|10|010|7"},
		{name: "reals", text: `{{printf "%f|%.2f|%8.3f|%-8.1f|%08.2f|%+.1f" .pi .f .pi .f .neg 2}}`, want: "3.141590|2.50|   3.142|2.5     |   -2.50|+2.0"},
		{name: "zeros pad without a precision", text: `{{printf "%08.0f|%06d|%06.2d|%.0d" .neg -3 5 0}}`, want: "-0000002|-00003|    05|0"},
		{name: "exponent", text: `{{printf "%e|%.2E" .e4 .tiny}}`, want: "1.234568e+04|1.20E-04"},
		{name: "general", text: `{{printf "%g|%g|%g|%g|%G|%.3g" .tiny .big 100 .half .small .pi}}`, want: "0.00012|1.23457e+06|100|0.5|1E-05|3.14"},
		{name: "JSON", text: `{{printf "%v|%v|%v" .obj .s .null}}`, want: `{"a":[1, "x"], "b":"B"}|"str"|null`},
		{name: "numbers written in a template are integers", text: `{{printf "%.1f %d" 2.9 2.9}}`, want: "2.0 2"},
		{name: "percent and unknown conversions", text: `{{printf "100%%|%q|%"}}`, want: "100%|%q|%"},
		{name: "positional", text: `{{printf "%2$s-%1$s-%2$s" "a" "b"}}`, want: "b-a-b"},
		{name: "width and precision arguments", text: `{{printf "%*d|%-*d|%.*f|%*d" 5 1 4 2 1 .pi -3 7}}`, want: "    1|2   |3.1|7  "},
		{name: "missing argument", text: `{{printf "%d %d" 1}}`, err: "argument 2 requested by format string"},
		{name: "not a number", text: `{{printf "%d" "x"}}`, err: "argument type mismatch"},
		{name: "format not a string", text: `{{printf 1}}`, err: "printf format is not string"},
	})
}
