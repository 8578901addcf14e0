package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"lbd/parser"
)

// aclSpec is what an ACL statement's arguments say.
type aclSpec struct {
	name      *parser.Arg // a name: defines (top level) or refers to an ACL
	file      *parser.Arg
	watch     bool
	forwarded bool
}

func (b *builder) aclArgs(n *parser.Node) (aclSpec, bool) {
	var s aclSpec
	args := n.Args
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.Kind == parser.Word && strings.EqualFold(a.Text, "-forwarded"):
			s.forwarded = true
		case a.Kind == parser.Word && (strings.EqualFold(a.Text, "-file") || strings.EqualFold(a.Text, "-filewatch")):
			if i+1 >= len(args) || args[i+1].Kind != parser.String {
				b.errorf(a.Span, "%s requires a file name", a.Text)
				return s, false
			}
			s.watch = strings.EqualFold(a.Text, "-filewatch")
			s.file = &args[i+1]
			i++
		case a.Kind == parser.String && s.name == nil:
			s.name = &args[i]
		default:
			b.errorf(a.Span, "unexpected argument")
			return s, false
		}
	}
	return s, true
}

// aclBody builds the ACL an ACL or TrustedIP statement defines: from its
// block lines or from a file.
func (b *builder) aclBody(n *parser.Node, s aclSpec) *ACL {
	acl := &ACL{}
	switch {
	case s.file != nil && s.watch:
		acl.Watch = &WatchedFile{Path: b.resolve(s.file.Text)}
		b.watch(acl.Watch.Path, *s.file, func(data []byte) error {
			nets, err := parseACLText(data)
			if err == nil {
				acl.SetNetworks(nets)
			}
			return err
		})
	case s.file != nil:
		path, data, ok := b.readFile(*s.file)
		if !ok {
			return nil
		}
		nets, err := parseACLText(data)
		if err != nil {
			b.errorf(s.file.Span, "%s: %s", path, err.Error())
			return nil
		}
		acl.Nets = nets
	case n.Block:
		acl.Nets = []netip.Prefix{}
		for _, c := range n.Children {
			if c.Keyword != "" || len(c.Args) != 1 {
				b.errorf(c.Span, "expected a CIDR")
				continue
			}
			p, err := parseCIDR(c.Args[0].Text)
			if err != nil {
				b.errorf(c.Args[0].Span, "%s", err.Error())
				continue
			}
			acl.Nets = append(acl.Nets, p)
		}
	default:
		b.errorf(stmtSpan(n), "ACL needs a list, -file or -filewatch")
		return nil
	}
	return acl
}

// parseCIDR reads an address with an optional /bits; without it the
// network is the single host.
func parseCIDR(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, fmt.Errorf("invalid CIDR %q", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid IP address %q", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// parseACLText reads an ACL file: one CIDR per line, optionally quoted;
// blank lines and # comments are skipped.
func parseACLText(data []byte) ([]netip.Prefix, error) {
	var nets []netip.Prefix
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		t = strings.Trim(t, `"`)
		p, err := parseCIDR(t)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		nets = append(nets, p)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nets, nil
}

// globalACL is a top-level ACL "name" definition.
func globalACL(b *builder, _ *Config, n *parser.Node, _ []unit) {
	s, ok := b.aclArgs(n)
	if !ok {
		return
	}
	if s.name == nil {
		b.errorf(stmtSpan(n), "a top-level ACL needs a name")
		return
	}
	if b.acls[s.name.Text] != nil {
		b.errorf(s.name.Span, "ACL %s already defined", s.name.Text)
		return
	}
	if acl := b.aclBody(n, s); acl != nil {
		acl.Name = s.name.Text
		b.acls[acl.Name] = acl
	}
}

// condACL is the ACL condition: a reference, a list or a file.
func condACL(b *builder, c *condCtx, n *parser.Node, _ []unit) {
	s, ok := b.aclArgs(n)
	if !ok {
		return
	}
	acl := b.aclRef(n, s)
	if acl != nil {
		*c.conds = append(*c.conds, newCond(Condition{Kind: CondACL, Forwarded: s.forwarded}, ConditionRare{ACL: acl}))
	}
}

// aclRef resolves an ACL or TrustedIP statement inside a section.
func (b *builder) aclRef(n *parser.Node, s aclSpec) *ACL {
	if s.name != nil && s.file == nil && !n.Block {
		acl := b.acls[s.name.Text]
		if acl == nil {
			b.errorf(s.name.Span, "no such ACL")
		}
		return acl
	}
	return b.aclBody(n, s)
}

// trustedIP handles TrustedIP in any section.
func (b *builder) trustedIP(n *parser.Node) *ACL {
	s, ok := b.aclArgs(n)
	if !ok {
		return nil
	}
	if s.forwarded {
		b.errorf(stmtSpan(n), "-forwarded makes no sense in TrustedIP")
		return nil
	}
	return b.aclRef(n, s)
}

// watch registers a -filewatch file and loads what is there now; a
// missing file is not an error (it may appear later) and bad content is
// reported as a warning, as Pound does.
func (b *builder) watch(path string, at parser.Arg, load func([]byte) error) {
	b.cfg.Watched = append(b.cfg.Watched, Watched{Pos: LocusOf(at.Span), Path: path, Load: load})
	data, err := b.readRegular(path)
	switch {
	case errors.Is(err, errNotRegular) || errors.Is(err, errTooBig):
		b.warnf(at.Span, "%s: %s", path, err.Error())
	case err != nil:
		if lerr := load(nil); lerr != nil {
			b.warnf(at.Span, "%s: %s", path, lerr.Error())
		}
	default:
		if lerr := load(data); lerr != nil {
			b.warnf(at.Span, "%s: %s", path, lerr.Error())
		}
	}
}

// watchedConds makes a -filewatch condition: the patterns of the file,
// ORed, replaced whenever the file changes.
func (b *builder) watchedConds(a parser.Arg, proto *Condition, o patOpts) *Condition {
	list := &PatternList{Watch: &WatchedFile{Path: b.resolve(a.Text)}, Kind: o.kind, ICase: o.icase, PCRE: o.pcre}
	b.watch(list.Watch.Path, a, func(data []byte) error {
		pats, err := parsePatternText(data, o)
		if err == nil {
			list.SetPatterns(pats)
		}
		return err
	})
	return newCond(Condition{Kind: CondWatched, Name: proto.Name, Decode: proto.Decode, Not: proto.Not},
		ConditionRare{Target: proto.Kind, Tag: proto.Rare().Tag, Subject: proto.Rare().Subject, List: list})
}

// parsePatternText compiles one pattern per line (blank lines and #
// comments skipped).
func parsePatternText(data []byte, o patOpts) ([]*Pattern, error) {
	var out []*Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		p, err := newPattern(o.kind, t, o.icase, o.pcre)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, p)
	}
	return out, sc.Err()
}
