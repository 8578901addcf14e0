package cluster

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"lbd/adminapi"
)

func sampleMessages() []*message {
	sent := time.Unix(1767225600, 123456789)
	return []*message{
		{Kind: kindHeartbeat, Node: "lb-a", Sent: sent},
		{Kind: kindSessions, Node: "lb-b", Sent: sent, Sessions: []sessionRecord{
			{Op: opSet, Listener: "front", Service: "web", Key: "sid=1", Backend: "10.0.0.1-80", TS: 1 << 40,
				Age: 1500 * time.Millisecond, Wait: 250 * time.Microsecond},
			{Op: opSet, Listener: "", Service: "#0", Key: "k\x00binary\xff", Backend: "/run/app.sock", TS: 7, Static: true},
			{Op: opDelete, Listener: "#1", Service: "api", Key: "gone", TS: 8},
			{Op: opTouch, Listener: "front", Service: "web", Key: "sid=1", Backend: "10.0.0.1-80", TS: 9, Age: time.Second},
			{Op: opFlush, Listener: "front", Service: "web", TS: 10},
			{Op: opFlush, Listener: "front", Service: "web", Backend: "10.0.0.2-80", TS: 11},
		}},
		{Kind: kindState, Node: "lb-c", Sent: sent, State: []stateRecord{
			{Stamp: Stamp{TS: 12, Tie: "lb-c"}, Change: enable("front", "web", "10.0.0.1-80", false), Wait: time.Millisecond},
			{Stamp: Stamp{TS: 13, Tie: "lb-c"}, Change: adminapi.Change{Kind: adminapi.ChangeLogLevel, Level: "combined"}},
			{Stamp: Stamp{TS: 14, Tie: "lb-c"}, Change: adminapi.Change{Kind: adminapi.ChangeBackendAdded, Listener: "#0",
				Service: "api", Backend: "10.0.0.9-8080", Spec: adminapi.BackendSpec{ID: "x", Address: "10.0.0.9", Port: 8080,
					HTTPS: true, Weight: 3, Priority: 2, ConnLimit: 100}}},
		}},
	}
}

func TestWireRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		t.Run(string(m.Kind), func(t *testing.T) {
			b := appendMessage(nil, m)
			got, err := decodeMessage(b)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Sent.Equal(m.Sent) {
				t.Fatalf("sent %v, want %v", got.Sent, m.Sent)
			}
			got.Sent = m.Sent
			if got.Sessions == nil && m.Sessions == nil || len(got.Sessions) == 0 && len(m.Sessions) == 0 {
				got.Sessions = m.Sessions
			}
			if len(got.State) == 0 && len(m.State) == 0 {
				got.State = m.State
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
			}
		})
	}
}

func TestStoredRoundTrip(t *testing.T) {
	for _, r := range sampleMessages()[1].Sessions {
		r.Age, r.Wait = 0, 0 // Redis keeps neither (the expiry carries the age)
		got, err := decodeStoredSession(storedSession(&r))
		if err != nil || got != r {
			t.Fatalf("stored session %+v: got %+v, %v", r, got, err)
		}
	}
	for _, r := range sampleMessages()[2].State {
		r.Wait = 0
		got, err := decodeStoredState(storedState(&r))
		if err != nil || got != r {
			t.Fatalf("stored state %+v: got %+v, %v", r, got, err)
		}
	}
}

// TestStoredOrderKey: the order key Redis compares is the stamp's, at the
// front of the value.
func TestStoredOrderKey(t *testing.T) {
	r := sessionRecord{Op: opSet, Listener: "l", Service: "s", Key: "k", Backend: "10.0.0.1-80", TS: 0x0102030405060708}
	v := storedSession(&r)
	want := Stamp{r.TS, r.Backend}.orderKey()
	if int(v[0]) != len(want) || !bytes.Equal(v[1:1+len(want)], want) {
		t.Fatalf("stored value starts %x, want length %d then %x", v[:1+len(want)], len(want), want)
	}
}

func TestWireRejects(t *testing.T) {
	good := appendMessage(nil, sampleMessages()[1])
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{name: "empty", b: nil, want: "not an lbd cluster message"},
		{name: "foreign", b: []byte("hello world"), want: "not an lbd cluster message"},
		{name: "future version", b: []byte{'L', 'B', 9, 'S'}, want: "wire version 9"},
		{name: "unknown kind", b: []byte{'L', 'B', 1, 'X', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, want: "unknown message kind"},
		{name: "truncated", b: good[:len(good)-3], want: "truncated"},
		{name: "non-minimal varint", b: []byte("LB\x01C\x80\x00"), want: "non-minimal varint"},
		{name: "trailing bytes", b: append(append([]byte(nil), good...), 0), want: "bytes after the records"},
		{name: "heartbeat with records", b: func() []byte {
			b := appendMessage(nil, &message{Kind: kindHeartbeat, Node: "x"})
			b[len(b)-1] = 1
			return b
		}(), want: "heartbeat with records"},
		{name: "huge count", b: func() []byte {
			b := appendMessage(nil, &message{Kind: kindSessions, Node: "x"})
			return append(b[:len(b)-1], 0xff, 0xff, 0xff, 0xff, 0x0f)
		}(), want: "over"},
		{name: "bad operation", b: func() []byte {
			m := &message{Kind: kindSessions, Node: "x", Sessions: []sessionRecord{{Op: opSet}}}
			b := appendMessage(nil, m)
			b[4+2+8+1] = 99 // header, node "x", sent, count: then the op
			return b
		}(), want: "unknown session operation"},
		{name: "reload is never sent", b: appendMessage(nil, &message{Kind: kindState, Node: "x",
			State: []stateRecord{{Change: adminapi.Change{Kind: adminapi.ChangeReloaded}}}}), want: "unknown change kind"},
		{name: "port out of range", b: appendMessage(nil, &message{Kind: kindState, Node: "x",
			State: []stateRecord{{Change: adminapi.Change{Kind: adminapi.ChangeBackendAdded, Spec: adminapi.BackendSpec{Port: 70000}}}}}),
			want: "over 65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeMessage(tt.b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// FuzzDecode: any input decodes without panicking, and what decodes
// encodes back to the same bytes (the format has one spelling per
// message).
func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages() {
		f.Add(appendMessage(nil, m))
	}
	f.Add([]byte("LB\x01H"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err != nil {
			return
		}
		again := appendMessage(nil, m)
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, again)
		}
	})
}

// FuzzStored: stored values decode without panicking.
func FuzzStored(f *testing.F) {
	for _, r := range sampleMessages()[1].Sessions {
		f.Add(storedSession(&r))
	}
	for _, r := range sampleMessages()[2].State {
		f.Add(storedState(&r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeStoredSession(b); err == nil {
			if _, err := decodeStoredSession(storedSession(&r)); err != nil {
				t.Fatalf("a decoded session does not decode again: %v", err)
			}
		}
		if r, err := decodeStoredState(b); err == nil {
			if _, err := decodeStoredState(storedState(&r)); err != nil {
				t.Fatalf("a decoded change does not decode again: %v", err)
			}
		}
	})
}
