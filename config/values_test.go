package config

import (
	"encoding/json"
	"testing"
	"time"

	"lbd/parser"
)

func testBuilder() *builder {
	return &builder{fs: osFS{}, cfg: newConfig("t.cfg"), unsup: map[string]bool{}, bes: map[*Backend]*backendExtra{}}
}

func word(s string) parser.Arg   { return parser.Arg{Kind: parser.Word, Text: s} }
func number(s string) parser.Arg { return parser.Arg{Kind: parser.Number, Text: s} }
func str(s string) parser.Arg    { return parser.Arg{Kind: parser.String, Text: s} }

// lastMsg is the message of the last diagnostic, "" if none.
func lastMsg(b *builder) string {
	if len(b.diags) == 0 {
		return ""
	}
	return b.diags[len(b.diags)-1].Msg
}

func TestDurationArg(t *testing.T) {
	tests := []struct {
		name string
		arg  parser.Arg
		want time.Duration
		err  string
	}{
		{name: "bare number", arg: number("30"), want: 30 * time.Second},
		{name: "seconds suffix", arg: word("45s"), want: 45 * time.Second},
		{name: "minutes and seconds", arg: word("1m20s"), want: 80 * time.Second},
		{name: "trailing bare seconds", arg: word("1m20"), want: 80 * time.Second},
		{name: "hours", arg: word("2h"), want: 2 * time.Hour},
		{name: "days", arg: word("1d"), want: 24 * time.Hour},
		{name: "all units", arg: word("1d1h1m1s"), want: 90061 * time.Second},
		{name: "zero literal allowed", arg: word("0s"), want: 0},
		{name: "zero number out of range", arg: number("0"), err: "value out of range [1..4294967295]"},
		{name: "too large number", arg: number("4294967296"), err: "value out of range [1..4294967295]"},
		{name: "unknown unit", arg: word("10x"), err: "bad duration"},
		{name: "unit without number", arg: word("m"), err: "bad duration"},
		{name: "overflow", arg: word("50000d"), err: "bad duration"},
		{name: "negative", arg: word("-5"), err: "bad duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := testBuilder()
			got, ok := b.durationArg(tc.arg)
			if msg := lastMsg(b); msg != tc.err || ok != (tc.err == "") {
				t.Fatalf("error %q (ok %v), want %q", msg, ok, tc.err)
			}
			if ok && got.D() != tc.want {
				t.Errorf("got %v, want %v", got.D(), tc.want)
			}
		})
	}
}

func TestSizeArg(t *testing.T) {
	tests := []struct {
		name string
		arg  parser.Arg
		max  uint64
		want int64
		err  string
	}{
		{name: "plain", arg: number("512"), max: maxInt, want: 512},
		{name: "kilo", arg: word("4k"), max: maxInt, want: 4096},
		{name: "upper kilo", arg: word("4K"), max: maxInt, want: 4096},
		{name: "mega", arg: word("10m"), max: maxInt, want: 10 << 20},
		{name: "giga", arg: word("1g"), max: 1 << 40, want: 1 << 30},
		{name: "bad suffix", arg: word("10q"), max: maxInt, err: "unrecognized size suffix"},
		{name: "two letter suffix", arg: word("1kb"), max: maxInt, err: "unrecognized size suffix"},
		{name: "suffix only", arg: word("k"), max: maxInt, err: "unrecognized size suffix"},
		{name: "over max", arg: word("4g"), max: maxInt, err: "value out of range [0..2147483647]"},
		{name: "huge number", arg: number("99999999999999999999999"), max: maxInt, err: "value out of range [0..2147483647]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := testBuilder()
			got, ok := b.sizeArg(tc.arg, tc.max)
			if msg := lastMsg(b); msg != tc.err || ok != (tc.err == "") {
				t.Fatalf("error %q (ok %v), want %q", msg, ok, tc.err)
			}
			if ok && got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBoolArg(t *testing.T) {
	tests := []struct {
		name string
		arg  parser.Arg
		want bool
	}{
		{name: "1", arg: number("1"), want: true},
		{name: "0", arg: number("0"), want: false},
		{name: "yes", arg: word("yes"), want: true},
		{name: "YES", arg: word("YES"), want: true},
		{name: "true", arg: word("true"), want: true},
		{name: "on", arg: word("On"), want: true},
		{name: "no", arg: word("no"), want: false},
		{name: "false", arg: word("false"), want: false},
		{name: "off", arg: word("OFF"), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := testBuilder()
			units, ok := b.classify([]parser.Arg{tc.arg}, nil, &parser.Node{})
			if !ok || !codeMatches('b', units[0]) {
				t.Fatalf("%q is not accepted as a boolean", tc.arg.Text)
			}
			if got := boolArg(units[0]); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		name string
		d    Duration
		want string
	}{
		{name: "whole seconds", d: Seconds(30), want: "30"},
		{name: "zero", d: 0, want: "0"},
		{name: "fraction", d: Duration(1500 * time.Millisecond), want: "1.5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.d)
			if err != nil || string(got) != tc.want {
				t.Errorf("got %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}
