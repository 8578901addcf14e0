package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lbd/config"
	"lbd/internal/privdrop"
	"lbd/parser"
)

func TestPrivilegesChanged(t *testing.T) {
	base := config.Config{User: "nobody", Group: "nogroup", RootJail: "/j"}
	tests := []struct {
		name string
		edit func(*config.Config)
		want []string
	}{
		{name: "same", edit: func(*config.Config) {}},
		{name: "only positions moved", edit: func(c *config.Config) {
			c.UserPos = config.LocusOf(parser.Span{Start: parser.Pos{File: "a.cfg", Line: 9}})
		}},
		{name: "user", edit: func(c *config.Config) { c.User = "www-data" }, want: []string{"User"}},
		{name: "group removed", edit: func(c *config.Config) { c.Group = "" }, want: []string{"Group"}},
		{name: "all three", edit: func(c *config.Config) { *c = config.Config{} }, want: []string{"User", "Group", "RootJail"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := base
			tt.edit(&next)
			got := privilegesChanged(&base, &next)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("changed %q, want %q", got, tt.want)
			}
			if len(got) > 0 && !strings.HasPrefix(privilegesWarning(got), strings.Join(tt.want, ", ")+" changed: ") {
				t.Errorf("warning %q", privilegesWarning(got))
			}
		})
	}
}

// TestStartOnly: what reloads are compared with keeps the start-only
// settings, so every reload still warns as TestPrivilegesChanged says,
// and none of the services (the start configuration is garbage once a
// reload replaced it).
func TestStartOnly(t *testing.T) {
	cfg := &config.Config{User: "nobody", Group: "nogroup", RootJail: "/j", Cluster: &config.Cluster{Redis: "127.0.0.1:6379"},
		Services: []*config.Service{{Name: "s"}}, Listeners: []*config.Listener{{Name: "l"}}}
	got := startOnly(cfg)
	if len(privilegesChanged(cfg, got)) != 0 || !sameCluster(cfg.Cluster, got.Cluster) {
		t.Errorf("start settings lost: %+v", got)
	}
	if got.Services != nil || got.Listeners != nil {
		t.Errorf("services or listeners kept: %d, %d", len(got.Services), len(got.Listeners))
	}
}

func TestSuccessorPrivEnv(t *testing.T) {
	tests := []struct {
		name string
		jail string
		want []string
	}{
		{name: "no jail: the binary's path", want: []string{"LBD_UPGRADE_EXE=/usr/sbin/lbd"}},
		{name: "jail: and the configuration's", jail: "/j",
			want: []string{"LBD_UPGRADE_EXE=/usr/sbin/lbd", "LBD_UPGRADE_CONFIG=/etc/lbd/lbd.cfg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &privileges{exe: "/usr/sbin/lbd", creds: privdrop.Creds{Spec: privdrop.Spec{Jail: tt.jail}}}
			if got := p.successorEnv("/etc/lbd/lbd.cfg"); !slices.Equal(got, tt.want) {
				t.Fatalf("env %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckExe(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		jail    string
		exe     string
		wantSub string
	}{
		{name: "no jail: not checked", exe: "/nonexistent/lbd"},
		{name: "jail, binary there", jail: "/j", exe: self},
		{name: "jail, binary missing: says where to put it", jail: "/srv/jail", exe: "/nonexistent/lbd",
			wantSub: "install the new binary (and the libraries it needs) at " + filepath.Join("/srv/jail", "/nonexistent/lbd")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &privileges{creds: privdrop.Creds{Spec: privdrop.Spec{Jail: tt.jail}}}
			err := p.checkExe(tt.exe)
			if tt.wantSub == "" && err != nil || tt.wantSub != "" && (err == nil || !strings.Contains(err.Error(), tt.wantSub)) {
				t.Fatalf("error %v, want %q", err, tt.wantSub)
			}
		})
	}
}
