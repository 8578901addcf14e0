package msglog

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

var when = time.Date(2026, 12, 5, 1, 2, 3, 4000, time.UTC)

func entry(level logrus.Level, msg string, f logrus.Fields) *logrus.Entry {
	return &logrus.Entry{Time: when, Level: level, Message: msg, Data: f}
}

func TestText(t *testing.T) {
	tests := []struct {
		name string
		prog string
		e    *logrus.Entry
		want string
	}{
		{"plain", "lbd", entry(logrus.InfoLevel, "starting...", nil), "lbd: starting...\n"},
		{"other fields in key order", "lbd", entry(logrus.InfoLevel, "control API change",
			logrus.Fields{"uri": "/x", "method": "PATCH", "status": 200}),
			"lbd: control API change method=PATCH status=200 uri=/x\n"},
		{"source named in the message is not repeated", "lbd", entry(logrus.WarnLevel, "Backend 127.0.0.1:80 dead (refused)",
			logrus.Fields{Backend: "127.0.0.1:80"}), "lbd: Backend 127.0.0.1:80 dead (refused)\n"},
		{"config position inside a span", "lbd", entry(logrus.ErrorLevel, "c.cfg:10.17-31: Lua function nope not defined",
			logrus.Fields{Config: "c.cfg:10"}), "lbd: c.cfg:10.17-31: Lua function nope not defined\n"},
		{"source not in the message is appended", "lbd", entry(logrus.WarnLevel, "[WAF] rule 1 matched",
			logrus.Fields{Listener: "web", Service: "app"}), "lbd: [WAF] rule 1 matched listener=web service=app\n"},
		{"a source inside a longer word is not named", "lbd", entry(logrus.InfoLevel, "control API change applied: disabled",
			logrus.Fields{Service: "app"}), "lbd: control API change applied: disabled service=app\n"},
		{"a port prefix is not the address", "lbd", entry(logrus.WarnLevel, "Backend 127.0.0.1:8080 dead",
			logrus.Fields{Backend: "127.0.0.1:80"}), "lbd: Backend 127.0.0.1:8080 dead backend=127.0.0.1:80\n"},
		{"empty source dropped", "lbd", entry(logrus.WarnLevel, "x", logrus.Fields{Service: ""}), "lbd: x\n"},
		{"as pound: Pound's wording", "pound", entry(logrus.WarnLevel, "[WAF] rule 1 matched",
			logrus.Fields{Listener: "web"}), "pound: [WAF] rule 1 matched\n"},
		{"as pound: other fields kept", "pound", entry(logrus.InfoLevel, "control API change",
			logrus.Fields{"status": 200}), "pound: control API change status=200\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(Text, tc.prog).Format(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name string
		e    *logrus.Entry
		want string
	}{
		{"plain", entry(logrus.InfoLevel, "configuration reloaded", nil),
			`{"time":"2026-12-05T01:02:03.000004Z","level":"info","msg":"configuration reloaded"}`},
		{"warn is warn", entry(logrus.WarnLevel, "w", nil),
			`{"time":"2026-12-05T01:02:03.000004Z","level":"warn","msg":"w"}`},
		{"sources in fixed order, then the rest sorted", entry(logrus.ErrorLevel, `say "hi"`,
			logrus.Fields{"z": 1, Config: "a.cfg:3", Backend: "b:80", "a": true, Listener: "l", Service: "s"}),
			`{"time":"2026-12-05T01:02:03.000004Z","level":"error","msg":"say \"hi\"","listener":"l","service":"s","backend":"b:80","config":"a.cfg:3","a":true,"z":1}`},
		{"an error is its text", entry(logrus.ErrorLevel, "m", logrus.Fields{"error": errors.New("boom")}),
			`{"time":"2026-12-05T01:02:03.000004Z","level":"error","msg":"m","error":"boom"}`},
		{"unencodable value is printed", entry(logrus.DebugLevel, "m", logrus.Fields{"c": make(chan int)}),
			`{"time":"2026-12-05T01:02:03.000004Z","level":"debug","msg":"m","c":"CHAN"}`},
		{"empty source dropped", entry(logrus.InfoLevel, "m", logrus.Fields{Service: ""}),
			`{"time":"2026-12-05T01:02:03.000004Z","level":"info","msg":"m"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New("JSON", "lbd").Format(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(got, &m); err != nil {
				t.Fatalf("not JSON: %v: %s", err, got)
			}
			if got[len(got)-1] != '\n' {
				t.Errorf("no newline: %q", got)
			}
			s := string(got[:len(got)-1])
			if tc.name == "unencodable value is printed" {
				// The channel's address varies: check the key only.
				if _, ok := m["c"].(string); !ok {
					t.Errorf("c not a string: %s", s)
				}
				return
			}
			if s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{"text": true, "JSON": true, "Json": true, "": false, "logfmt": false} {
		if Valid(s) != want {
			t.Errorf("Valid(%q) = %v", s, !want)
		}
	}
}
