package h2backend

import (
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"hours", "2H", 2 * time.Hour, true},
		{"minutes", "3M", 3 * time.Minute, true},
		{"seconds", "5S", 5 * time.Second, true},
		{"milliseconds", "100m", 100 * time.Millisecond, true},
		{"microseconds", "7u", 7 * time.Microsecond, true},
		{"nanoseconds", "99999999n", 99999999 * time.Nanosecond, true},
		{"eight digits", "99999999H", 1 << 62, true},
		{"nine digits", "123456789S", 0, false},
		{"no unit", "100", 0, false},
		{"no digits", "S", 0, false},
		{"unknown unit", "5s", 0, false},
		{"sign", "-5S", 0, false},
		{"empty", "", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseTimeout([]byte(c.in))
			if got != c.want || ok != c.ok {
				t.Errorf("ParseTimeout(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestIsGRPC(t *testing.T) {
	cases := []struct {
		name, in string
		want     bool
	}{
		{"plain", "application/grpc", true},
		{"proto", "application/grpc+proto", true},
		{"web", "application/grpc-web", true},
		{"parameters", "application/grpc; charset=utf-8", true},
		{"upper case", "Application/GRPC", true},
		{"json", "application/json", false},
		{"prefix only", "application/grpcx", false},
		{"empty", "", false},
	}
	for _, c := range cases {
		if got := IsGRPC([]byte(c.in)); got != c.want {
			t.Errorf("%s: IsGRPC(%q) = %v", c.name, c.in, got)
		}
	}
}

func TestStatusForHTTP(t *testing.T) {
	cases := []struct {
		name         string
		status, code int
	}{
		{"no backend", 503, CodeUnavailable},
		{"bad backend", 502, CodeUnavailable},
		{"timeout", 504, CodeDeadlineExceeded},
		{"refused by a rule", 403, CodePermissionDenied},
		{"authentication", 401, CodeUnauthenticated},
		{"no such service", 404, CodeUnimplemented},
		{"too large", 413, CodeResourceExhaust},
		{"rate limited", 429, CodeUnavailable},
		{"bad request", 400, CodeInternal},
		{"anything else", 500, CodeUnknown},
	}
	for _, c := range cases {
		if got := StatusForHTTP(c.status); got != c.code {
			t.Errorf("%s: StatusForHTTP(%d) = %d, want %d", c.name, c.status, got, c.code)
		}
	}
}

func TestHealthMessages(t *testing.T) {
	if got, want := string(appendHealthRequest(nil, "")), "\x00\x00\x00\x00\x00"; got != want {
		t.Errorf("request for the server: %q, want %q", got, want)
	}
	if got, want := string(appendHealthRequest(nil, "svc")), "\x00\x00\x00\x00\x05\x0a\x03svc"; got != want {
		t.Errorf("request for svc: %q, want %q", got, want)
	}
	cases := []struct {
		name string
		in   string
		want uint64
		ok   bool
	}{
		{"serving", "\x00\x00\x00\x00\x02\x08\x01", serving, true},
		{"not serving", "\x00\x00\x00\x00\x02\x08\x02", 2, true},
		{"unknown (empty message)", "\x00\x00\x00\x00\x00", 0, true},
		{"unknown field skipped", "\x00\x00\x00\x00\x07\x12\x03abc\x08\x01", serving, true},
		{"fixed32 and fixed64 skipped", "\x00\x00\x00\x00\x10\x1d\x01\x02\x03\x04\x21\x01\x02\x03\x04\x05\x06\x07\x08\x08\x01", serving, true},
		{"compressed", "\x01\x00\x00\x00\x02\x08\x01", 0, false},
		{"length disagrees", "\x00\x00\x00\x00\x05\x08\x01", 0, false},
		{"short", "\x00\x00\x00", 0, false},
		{"truncated varint", "\x00\x00\x00\x00\x02\x08\x80", 0, false},
		{"field overruns", "\x00\x00\x00\x00\x03\x12\x05a", 0, false},
		{"group wire type", "\x00\x00\x00\x00\x01\x0b", 0, false},
	}
	for _, c := range cases {
		got, err := parseHealthResponse([]byte(c.in))
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("%s: %v, %v; want %v, ok %v", c.name, got, err, c.want, c.ok)
		}
	}
}

func FuzzParseHealthResponse(f *testing.F) {
	for _, s := range []string{"\x00\x00\x00\x00\x02\x08\x01", "\x00\x00\x00\x00\x07\x12\x03abc\x08\x01", "\x00\x00\x00\x00\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseHealthResponse(b)
		if err != nil && st != 0 {
			t.Errorf("status %d with error %v", st, err)
		}
	})
}

func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"100m", "5S", "99999999H", "1n", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseTimeout([]byte(s))
		if ok && (d < 0 || len(s) > maxTimeoutDigits+1) {
			t.Errorf("ParseTimeout(%q) = %v", s, d)
		}
	})
}
