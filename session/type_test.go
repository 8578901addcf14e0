package session

import (
	"errors"
	"testing"
)

func TestParseType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Type
		wantErr bool
	}{
		{name: "none", in: "NONE", want: None},
		{name: "ip", in: "IP", want: IP},
		{name: "basic lower case", in: "basic", want: Basic},
		{name: "url mixed case", in: "Url", want: URL},
		{name: "parm", in: "PARM", want: Parm},
		{name: "cookie", in: "COOKIE", want: Cookie},
		{name: "header", in: "header", want: Header},
		{name: "cookieinsert", in: "COOKIEINSERT", want: CookieInsert},
		{name: "backendcookie alias", in: "BackendCookie", want: CookieInsert},
		{name: "unknown", in: "SSL", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "prefix of a name", in: "COOK", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseType(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrUnknownType) {
					t.Fatalf("ParseType(%q) error = %v, want ErrUnknownType", tt.in, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseType(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestTypeString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		typ  Type
		want string
	}{
		{name: "none", typ: None, want: "NONE"},
		{name: "ip", typ: IP, want: "IP"},
		{name: "basic", typ: Basic, want: "BASIC"},
		{name: "url", typ: URL, want: "URL"},
		{name: "parm", typ: Parm, want: "PARM"},
		{name: "cookie", typ: Cookie, want: "COOKIE"},
		{name: "header", typ: Header, want: "HEADER"},
		{name: "cookieinsert", typ: CookieInsert, want: "COOKIEINSERT"},
		{name: "out of range", typ: Type(42), want: "Type(42)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.typ.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
			if tt.typ > CookieInsert {
				return
			}
			back, err := ParseType(tt.want)
			if err != nil || back != tt.typ {
				t.Fatalf("ParseType(String()) = %v, %v; want %v", back, err, tt.typ)
			}
		})
	}
}

func TestNeedsID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		typ  Type
		want bool
	}{
		{name: "ip", typ: IP, want: false},
		{name: "basic", typ: Basic, want: false},
		{name: "url", typ: URL, want: true},
		{name: "parm", typ: Parm, want: false},
		{name: "cookie", typ: Cookie, want: true},
		{name: "header", typ: Header, want: true},
		{name: "cookieinsert", typ: CookieInsert, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.typ.NeedsID(); got != tt.want {
				t.Fatalf("NeedsID() = %v, want %v", got, tt.want)
			}
		})
	}
}
