package engine

import (
	"testing"

	"lbd/config"
	"lbd/session"
)

// TestSessionTypesKnown checks that every session type the configuration
// accepts is one session.ParseType knows, under the same name: the build
// refuses a service whose type it does not.
func TestSessionTypesKnown(t *testing.T) {
	cases := []struct {
		name string
		cfg  config.SessionType
		want session.Type
	}{
		{"IP", config.SessionIP, session.IP},
		{"BASIC", config.SessionBasic, session.Basic},
		{"URL", config.SessionURL, session.URL},
		{"PARM", config.SessionParm, session.Parm},
		{"COOKIE", config.SessionCookie, session.Cookie},
		{"HEADER", config.SessionHeader, session.Header},
		{"COOKIEINSERT", config.SessionCookieInsert, session.CookieInsert},
		{"NONE", config.SessionNone, session.None},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := session.ParseType(string(tc.cfg))
			if err != nil || got != tc.want {
				t.Fatalf("ParseType(%q) = %v, %v; want %v", tc.cfg, got, err, tc.want)
			}
			if got.String() != string(tc.cfg) {
				t.Errorf("%v.String() = %q, want the configuration's %q", got, got.String(), tc.cfg)
			}
		})
	}
}
