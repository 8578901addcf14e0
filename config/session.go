package config

import (
	"strings"

	"lbd/parser"
)

// sessionBuild is a Session block under construction; bad records that a
// Type was given but rejected, so "Session type not defined" does not
// follow "unknown session type".
type sessionBuild struct {
	s   *Session
	bad bool
}

// sessionTypes maps the accepted Type values (case-insensitive) to the
// model's names; BACKENDCOOKIE is zproxy's alias of COOKIEINSERT.
var sessionTypes = map[string]SessionType{
	"IP": SessionIP, "BASIC": SessionBasic, "URL": SessionURL, "PARM": SessionParm,
	"COOKIE": SessionCookie, "HEADER": SessionHeader,
	"COOKIEINSERT": SessionCookieInsert, "BACKENDCOOKIE": SessionCookieInsert,
}

var sessionTable = table[*sessionBuild]{}

// DefaultMaxSessions bounds a service's session table when MaxSessions is
// not given: about 150 MB of memory at most.
const DefaultMaxSessions = 1 << 20

func initSessionTable() {
	t := sessionTable
	t.add("Type", "[sl]", func(b *builder, sb *sessionBuild, _ *parser.Node, u []unit) {
		typ, ok := sessionTypes[strings.ToUpper(u[0].arg.Text)]
		if !ok {
			b.errorf(u[0].arg.Span, "unknown session type")
			sb.bad = true
			return
		}
		sb.s.Type = typ
	})
	t.add("TTL", "[nl]", func(b *builder, sb *sessionBuild, _ *parser.Node, u []unit) {
		d, ok := b.durationArg(u[0].arg)
		sb.s.TTL, sb.bad = d, sb.bad || !ok
	})
	t.add("ID", "s", func(_ *builder, sb *sessionBuild, _ *parser.Node, u []unit) { sb.s.ID = u[0].arg.Text })
	t.add("Path", "s", func(_ *builder, sb *sessionBuild, _ *parser.Node, u []unit) { sb.s.Path = u[0].arg.Text })
	t.add("Domain", "s", func(_ *builder, sb *sessionBuild, _ *parser.Node, u []unit) { sb.s.Domain = u[0].arg.Text })
	// MaxSessions is lbd's own: the cap on the service's session table
	// (oldest sessions are evicted first), so a flood of new keys cannot
	// exhaust memory. Default DefaultMaxSessions.
	t.add("MaxSessions", "n", func(b *builder, sb *sessionBuild, _ *parser.Node, u []unit) {
		v, ok := b.intArg(u[0].arg, 1, 1<<30)
		sb.s.Max, sb.bad = int(v), sb.bad || !ok
	})
}

// serviceSession builds a Session block and checks it is complete, with
// Pound's messages.
func serviceSession(b *builder, s *Service, n *parser.Node, _ []unit) {
	if s.Session != nil {
		b.errorf(stmtSpan(n), "Session redefined")
		b.followf(s.Session.Pos.Span(), "original definition was here")
		return
	}
	sb := &sessionBuild{s: &Session{Pos: LocusOf(stmtSpan(n)), Max: DefaultMaxSessions}}
	walk(b, sessionTable, nil, sb, n.Children)
	if sb.bad {
		return
	}
	switch {
	case sb.s.Type == "":
		b.errorf(stmtSpan(n), "Session type not defined")
	case sb.s.TTL == 0:
		b.errorf(stmtSpan(n), "Session TTL not defined")
	case sb.s.ID == "" && (sb.s.Type == SessionCookie || sb.s.Type == SessionURL || sb.s.Type == SessionHeader):
		b.errorf(stmtSpan(n), "Session ID not defined")
	default:
		s.Session = sb.s
	}
}
