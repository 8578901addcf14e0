package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sirupsen/logrus"

	"lbd/adminapi"
	"lbd/config"
	"lbd/internal/msglog"
	"lbd/parser"
)

func TestErrorFields(t *testing.T) {
	at := config.LocusOf(parser.Span{Start: parser.Pos{File: "a.cfg", Line: 7, Col: 1}, End: parser.Pos{File: "a.cfg", Line: 9, Col: 3}})
	diag := &parser.Diagnostic{Span: parser.Span{Start: parser.Pos{File: "b.cfg", Line: 2, Col: 5}}, Msg: "bad"}
	tests := []struct {
		name string
		err  error
		want string // the config field, "" for none
	}{
		{"plain error", errors.New("boom"), ""},
		{"diagnostic", diag, "b.cfg:2"},
		{"joined diagnostics: the first", errors.Join(diag, &parser.Diagnostic{Span: parser.Span{Start: parser.Pos{File: "c.cfg", Line: 1}}}), "b.cfg:2"},
		{"wrapped diagnostic", fmt.Errorf("reload: %w", diag), "b.cfg:2"},
		{"statement", atStatement(at, "listener 0", errors.New("address in use")), "a.cfg:7"},
		{"file without a line", &parser.Diagnostic{Span: parser.Span{Start: parser.Pos{File: "x.cfg"}}, Msg: "can't stat"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := ErrorFields(tc.err)["config"].(string) // absent: ""
			if got != tc.want {
				t.Errorf("config = %q, want %q", got, tc.want)
			}
		})
	}
	if got, want := atStatement(at, "listener 0", errors.New("in use")).Error(), "a.cfg:7.1-9.3: listener 0: in use"; got != want {
		t.Errorf("text %q, want %q (the position first, as before)", got, want)
	}
}

func TestChangeText(t *testing.T) {
	tests := []struct {
		c    adminapi.Change
		want string
	}{
		{adminapi.Change{Kind: adminapi.ChangeEnabled, Enabled: true}, "enabled"},
		{adminapi.Change{Kind: adminapi.ChangeEnabled}, "disabled"},
		{adminapi.Change{Kind: adminapi.ChangeBackendWeight, Spec: adminapi.BackendSpec{Weight: 3}}, "weight set to 3"},
		{adminapi.Change{Kind: adminapi.ChangeLogLevel, Level: "combined"}, `request log format set to "combined"`},
		{adminapi.Change{Kind: adminapi.ChangeReloaded}, ""},
	}
	for _, tc := range tests {
		if got := changeText(tc.c); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
	f := (&Engine{}).changeFields(adminapi.Change{Listener: "", Service: "app", Backend: "b-80"})
	if len(f) != 2 || f["service"] != "app" || f["backend"] != "b-80" {
		t.Errorf("fields %v", f)
	}
}

// TestBackendLogFields: a backend's messages name its address and the
// file and line of its statement.
func TestBackendLogFields(t *testing.T) {
	log := logrus.New()
	src := &serviceSource{service: "web", base: log}
	at := config.LocusOf(parser.Span{Start: parser.Pos{File: "a.cfg", Line: 7, Col: 3}, End: parser.Pos{File: "a.cfg", Line: 10, Col: 5}})
	e, ok := newBackendLog(src, "127.0.0.1:80", at).entry().(*logrus.Entry)
	if !ok {
		t.Fatal("not a logrus entry")
	}
	if e.Data[msglog.Backend] != "127.0.0.1:80" || e.Data[msglog.Config] != "a.cfg:7" || e.Data[msglog.Service] != "web" {
		t.Errorf("fields %v", e.Data)
	}
	if e, ok := newBackendLog(src, "127.0.0.1:80", config.Locus{}).entry().(*logrus.Entry); !ok || e.Data[msglog.Config] != "" {
		t.Errorf("a backend of no statement: entry %v", e)
	}
}
