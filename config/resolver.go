package config

import (
	"lbd/parser"
)

// Resolver is Pound 4's Resolver section: how dynamic backends query DNS.
// A configuration without one gets DefaultResolver's values.
type Resolver struct {
	Pos Locus `json:"pos"`
	// ConfigFile is the resolv.conf file read at load ("" when ConfigText
	// was used, or neither: then the system's /etc/resolv.conf is read
	// when lbd starts resolving).
	ConfigFile string `json:"config_file,omitempty"`
	// ConfigText is the resolv.conf text: ConfigText's body, or the
	// content of ConfigFile.
	ConfigText string `json:"config_text,omitempty"`
	// CNAMEChain is the longest CNAME chain accepted; 0 and 1 accept a
	// single CNAME (Pound's default: no chains).
	CNAMEChain int `json:"cname_chain"`
	// RetryInterval is when a failed or empty lookup is retried, unless
	// the backend has its own RetryInterval (Pound default 600 s).
	RetryInterval Duration `json:"retry_interval"`
	Debug         bool     `json:"debug"`
}

// defaultRetryInterval is Pound's resolver retry interval.
const defaultRetryInterval = 600

// DefaultResolver returns the settings used without a Resolver section.
func DefaultResolver() *Resolver {
	return &Resolver{RetryInterval: Seconds(defaultRetryInterval)}
}

// resolverExtra remembers which of ConfigFile and ConfigText came last.
type resolverExtra struct {
	srcName string
	srcSpan parser.Span
}

var resolverTable = table[*Resolver]{}

func initResolverTable() {
	t := resolverTable
	t.add("ConfigFile", "s", func(b *builder, r *Resolver, n *parser.Node, u []unit) {
		b.resolverSource(r, "ConfigFile", stmtSpan(n))
		if path, data, ok := b.readFile(u[0].arg); ok {
			r.ConfigFile, r.ConfigText = path, string(data)
		}
	})
	t.add("ConfigText", "s", func(b *builder, r *Resolver, n *parser.Node, u []unit) {
		b.resolverSource(r, "ConfigText", stmtSpan(n))
		r.ConfigFile, r.ConfigText = "", u[0].arg.Text
	}).block()
	t.add("Debug", "b", func(_ *builder, r *Resolver, _ *parser.Node, u []unit) { r.Debug = boolArg(u[0]) })
	t.add("CNAMEChain", "n", func(b *builder, r *Resolver, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, maxCNAMEChain); ok {
			r.CNAMEChain = int(n)
		}
	})
	t.add("RetryInterval", "[nl]", func(b *builder, r *Resolver, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			r.RetryInterval = d
		}
	})
}

// maxCNAMEChain bounds CNAMEChain: every link is one more query, and
// Pound's advice is 2 or 3.
const maxCNAMEChain = 16

// resolverSource warns, as Pound does, when ConfigFile and ConfigText
// are both given: the later one wins.
func (b *builder) resolverSource(r *Resolver, name string, s parser.Span) {
	if b.resolverSrc.srcName != "" {
		b.warnf(s, "%s overrides prior %s", name, b.resolverSrc.srcName)
		b.notef(b.resolverSrc.srcSpan, "%s previously defined here", b.resolverSrc.srcName)
	}
	b.resolverSrc = resolverExtra{srcName: name, srcSpan: s}
}

// globalResolver builds the Resolver section; a second one adds to the
// first, as repeated statements do in Pound.
func globalResolver(b *builder, c *Config, n *parser.Node, _ []unit) {
	if c.Resolver == nil {
		c.Resolver = DefaultResolver()
		c.Resolver.Pos = LocusOf(stmtSpan(n))
	}
	walk(b, resolverTable, nil, c.Resolver, n.Children)
}
