package http1

import (
	"errors"
	"testing"
)

func TestLookupMethod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want Method
		ok   bool
	}{
		{name: "get", in: "GET", want: MethodGET, ok: true},
		{name: "options", in: "OPTIONS", want: MethodOPTIONS, ok: true},
		{name: "rpc_in_data", in: "RPC_IN_DATA", want: MethodRPCINDATA, ok: true},
		{name: "version_control", in: "VERSION-CONTROL", want: MethodVERSIONCONTROL, ok: true},
		{name: "mkcalendar", in: "MKCALENDAR", want: MethodMKCALENDAR, ok: true},
		{name: "lower_case", in: "get"},
		{name: "pri", in: "PRI"},
		{name: "empty", in: ""},
		{name: "too_long", in: "VERSION-CONTROLX"},
		{name: "prefix", in: "GE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := LookupMethod([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Fatalf("LookupMethod(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestMethodNamesRoundTrip covers every known method through LookupMethod
// and String.
func TestMethodNamesRoundTrip(t *testing.T) {
	t.Parallel()
	for m := MethodGET; m < methodCount; m++ {
		got, ok := LookupMethod([]byte(m.String()))
		if !ok || got != m {
			t.Errorf("LookupMethod(%q) = %v, %v; want %v", m.String(), got, ok, m)
		}
	}
	if s := Method(200).String(); s != "" {
		t.Errorf("Method(200).String() = %q, want empty", s)
	}
}

func TestMethodAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		method Method
		// allowed[n] is the answer for xHTTP n, n = 0..5
		allowed [6]bool
	}{
		{name: "get", method: MethodGET, allowed: [6]bool{true, true, true, true, true, true}},
		{name: "head", method: MethodHEAD, allowed: [6]bool{true, true, true, true, true, true}},
		{name: "put", method: MethodPUT, allowed: [6]bool{false, true, true, true, true, true}},
		{name: "delete", method: MethodDELETE, allowed: [6]bool{false, true, true, true, true, true}},
		{name: "options", method: MethodOPTIONS, allowed: [6]bool{false, false, true, true, true, true}},
		{name: "propfind", method: MethodPROPFIND, allowed: [6]bool{false, false, true, true, true, false}},
		{name: "mkcalendar", method: MethodMKCALENDAR, allowed: [6]bool{false, false, true, true, true, false}},
		{name: "connect", method: MethodCONNECT, allowed: [6]bool{false, false, false, true, true, false}},
		{name: "bdelete", method: MethodBDELETE, allowed: [6]bool{false, false, false, true, true, false}},
		{name: "rpc_out_data", method: MethodRPCOUTDATA, allowed: [6]bool{false, false, false, false, true, false}},
		{name: "version_control", method: MethodVERSIONCONTROL, allowed: [6]bool{false, false, false, false, true, false}},
		{name: "unknown", method: MethodUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for lvl, want := range tt.allowed {
				if got := MethodAllowed(lvl, tt.method); got != want {
					t.Errorf("MethodAllowed(%d, %v) = %v, want %v", lvl, tt.method, got, want)
				}
			}
			for _, lvl := range []int{-1, 6} {
				if MethodAllowed(lvl, tt.method) {
					t.Errorf("MethodAllowed(%d, %v) = true, want false (out of range)", lvl, tt.method)
				}
			}
		})
	}
}

// PURGE is a method only where Limits.Purge says a service takes it;
// elsewhere it stays the unknown method Pound refuses with 400.
func TestPurgeMethod(t *testing.T) {
	const head = "PURGE /x HTTP/1.1\r\nHost: a\r\n\r\n"
	tests := []struct {
		name   string
		lim    *Limits
		status int // 0: parsed as MethodPURGE
	}{
		{name: "no limits", lim: nil, status: 400},
		{name: "listener without Purge", lim: &Limits{CheckMethods: true, XHTTP: 4}, status: 400},
		{name: "listener with Purge, xHTTP 0", lim: &Limits{CheckMethods: true, XHTTP: 0, Purge: true}},
		{name: "listener with Purge, REST set", lim: &Limits{CheckMethods: true, XHTTP: 5, Purge: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			err := ParseRequestHead([]byte(head), &req, tc.lim)
			if tc.status == 0 {
				if err != nil || req.MethodID != MethodPURGE {
					t.Fatalf("err %v, method %v; want PURGE", err, req.MethodID)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != tc.status {
				t.Fatalf("err %v; want status %d", err, tc.status)
			}
		})
	}
	for lvl := 0; lvl < 6; lvl++ {
		if MethodAllowed(lvl, MethodPURGE) {
			t.Errorf("xHTTP %d allows PURGE", lvl)
		}
	}
}
