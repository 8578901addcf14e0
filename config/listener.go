package config

import (
	"context"
	"math"
	"net"
	"regexp"
	"strings"
	"time"

	"lbd/parser"
)

// listenerExtra is build-time state of a listener that is resolved once the
// whole file has been read.
type listenerExtra struct {
	hdrOps    [][]unit // HeaderOption statements, applied to the global set
	clientSet bool
	lineSet   bool
	certSeen  bool
	addr      *parser.Arg
	port      *parser.Arg
	// The firewall statements (waf.go): WafRules arguments in order,
	// the first WAF statement, a CRS tuning statement.
	wafArgs  []parser.Arg
	wafSeen  bool
	wafStmt  parser.Span
	wafTuned *parser.Arg
}

// listenerUnsupported are listener directives lbd accepts without
// implementing them.
var listenerUnsupported = canonSet(
	"CertDir", "SSLConfigFile", "SSLConfigSection", "SSLUncleanShutdown",
	"ForwardSNI", "DHParams", "ForceHTTP10")

var (
	httpTable  = table[*Listener]{}
	httpsTable = table[*Listener]{}
)

// poundErrorCodes are the statuses ErrorFile and Error accept (Pound's
// http_status_to_pound).
var poundErrorCodes = map[int64]bool{400: true, 401: true, 403: true, 404: true, 405: true, 413: true, 414: true, 429: true, 500: true, 501: true, 503: true}

// listenerNameRe is zproxy's rule for listener Name.
var listenerNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func initListenerTables() {
	t := httpTable
	t.add("Address", "[sl]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		l.Address = u[0].arg.Text
		b.lst[l].addr = &u[0].arg
	})
	t.add("Port", "[nls]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if p, ok := b.port(u[0].arg, 0); ok {
			l.Port = p
			b.lst[l].port = &u[0].arg
		}
	})
	t.add("SocketFrom", "s", func(_ *builder, l *Listener, _ *parser.Node, u []unit) { l.SocketFrom = u[0].arg.Text })
	t.add("Name", "[sl]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if !listenerNameRe.MatchString(u[0].arg.Text) {
			b.errorf(u[0].arg.Span, "invalid listener name")
			return
		}
		l.Name = u[0].arg.Text
	})
	t.add("xHTTP", "n", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if n, ok := b.intArg(u[0].arg, 0, 5); ok {
			l.XHTTP = int(n)
		}
	})
	t.add("Client", "[nl]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if d, ok := b.durationArg(u[0].arg); ok {
			l.Client = d
			b.lst[l].clientSet = true
		}
	})
	t.add("CheckURL", "s", listenerCheckURL)
	addErrorPageDirectives(t)
	addWAFDirectives(t)
	t.add("MaxRequest", "[nl]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if n, ok := b.sizeArg(u[0].arg, math.MaxInt64); ok {
			l.MaxRequest = n
		}
	})
	t.add("MaxURI", "[nl]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if n, ok := b.sizeArg(u[0].arg, maxInt); ok {
			l.MaxURI = int(n)
		}
	})
	t.add("LineBufferSize", "[nl]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if n, ok := b.sizeArg(u[0].arg, maxInt); ok {
			l.LineBuffer = int(n)
			b.lst[l].lineSet = true
		}
	})
	addHeaderDirectives(t, func(l *Listener) *HeaderRules { return &l.Headers }, func(l *Listener) *Rewrites { return &l.Rewrites })
	initLangListener(t)
	t.add("HeaderOption", "[sl]+", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		// Validate now, apply in finish once the global set is known.
		before := len(b.diags)
		if b.headerOptions(nil, u); len(b.diags) == before {
			b.lst[l].hdrOps = append(b.lst[l].hdrOps, u)
		}
	})
	t.add("RewriteLocation", "nn?", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if v, url, ok := b.rewriteLocation(u); ok {
			l.RewriteLoc, l.RewriteLocURL = v, url
		}
	})
	t.add("RewriteDestination", "b", func(_ *builder, l *Listener, _ *parser.Node, u []unit) { l.RewriteDest = boolArg(u[0]) })
	t.add("RewriteHost", "b", func(_ *builder, l *Listener, _ *parser.Node, u []unit) { l.RewriteHost = boolArg(u[0]) })
	t.add("LogLevel", "[sn]", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		if lvl, ok := b.logLevel(u[0]); ok {
			l.LogLevel = lvl
		}
	})
	t.add("Service", "s?", func(b *builder, l *Listener, n *parser.Node, u []unit) {
		l.Services = b.service(n, u, l.Services)
	}).block()
	t.add("ACME", "s", listenerACME)
	for k, d := range t {
		httpsTable[k] = d
	}
	addTLSDirectives(httpsTable)
	addACMEDirectives(httpsTable)
	addH2CDirective(httpTable)
}

// addErrorPageDirectives registers ErrorFile, the classic ErrNNN and
// zproxy's Err NNN, ErrNoSsl and NoSslRedirect.
func addErrorPageDirectives(t table[*Listener]) {
	t.add("ErrorFile", "ns", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		b.errorFile(l, u[0].arg, u[1].arg, poundErrorCodes)
	})
	for _, code := range []string{"400", "401", "403", "404", "413", "414", "500", "501", "503"} {
		t.add("Err"+code, "s", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
			b.errorFile(l, parser.Arg{Kind: parser.Number, Text: code, Span: u[0].arg.Span}, u[0].arg, nil)
		}).deprecated(useInstead("ErrorFile " + code))
	}
	t.add("Err", "ns", func(b *builder, l *Listener, _ *parser.Node, u []unit) {
		b.errorFile(l, u[0].arg, u[1].arg, zproxyErrorCodes)
	})
	t.add("ErrNoSsl", "n?s", listenerErrNoSSL)
	t.add("NoSslRedirect", "n?s", listenerNoSSLRedirect)
}

// zproxyErrorCodes are the statuses zproxy's `Err NNN "file"` accepts.
var zproxyErrorCodes = func() map[int64]bool {
	m := map[int64]bool{}
	for c := int64(300); c < 600; c++ {
		m[c] = true
	}
	return m
}()

// listener builds a ListenHTTP or ListenHTTPS block.
func (b *builder) listener(n *parser.Node, u []unit, https bool) {
	l := &Listener{
		Pos:           LocusOf(stmtSpan(n)),
		HTTPS:         https,
		RewriteLoc:    1,
		RewriteLocURL: true,
		Services:      []*Service{},
	}
	if len(u) > 0 {
		l.Name = u[0].arg.Text
	}
	ex := &listenerExtra{}
	b.lst[l] = ex
	tab := httpTable
	if https {
		// zproxy speaks HTTP/1.1 only; lbd offers HTTP/2 to Pound files
		// unless the listener says HTTP2 0.
		l.TLS = &ListenerTLS{Certs: []*CertFile{}, NoHTTPS11: 2, HTTP2: b.cfg.Dialect == DialectPound}
		tab = httpsTable
	}
	walk(b, tab, listenerUnsupported, l, n.Children)
	if https && !ex.certSeen && l.TLS.ACME == nil {
		b.errorf(stmtSpan(n), "no certificates for HTTPS; use Cert statement to load some")
	}
	// zproxy's test templates give every listener the same Name; only
	// Pound's ListenHTTP "name" must be unique.
	if l.Name != "" && b.cfg.Dialect == DialectPound {
		for _, o := range b.cfg.Listeners {
			if o.Name == l.Name {
				b.errorf(stmtSpan(n), "listener name is not unique")
			}
		}
	}
	b.listenerAddress(l, ex)
	b.compileWAF(l, ex)
	b.cfg.Listeners = append(b.cfg.Listeners, l)
}

// listenerAddress validates Address/Port and applies the default port.
func (b *builder) listenerAddress(l *Listener, ex *listenerExtra) {
	if ex.addr != nil {
		l.Unix = strings.Contains(l.Address, "/")
		if l.Unix && ex.port != nil {
			b.errorf(ex.port.Span, "Port is not applicable to this address family")
		}
		if !l.Unix && net.ParseIP(l.Address) == nil && !b.opts.NoDNS {
			if err := lookupHost(l.Address, ""); err != nil {
				b.errorf(ex.addr.Span, "bad listener address: %s", dnsErrText(err))
			}
		}
	}
	if ex.port == nil && l.SocketFrom == "" && !l.Unix {
		l.Port = 80
		if l.HTTPS {
			l.Port = 443
		}
	}
}

// lookupHost checks that a host name resolves to an address of family
// ("" or any, inet, inet6), giving up after a few seconds so a dead
// resolver cannot hang startup.
func lookupHost(name, family string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := net.DefaultResolver.LookupIP(ctx, ipNetwork(family), name)
	return err
}

// ipNetwork is the net package's name of an address family.
func ipNetwork(family string) string {
	switch family {
	case "inet":
		return "ip4"
	case "inet6":
		return "ip6"
	}
	return "ip"
}

// dnsErrText is a resolver error without the server address.
func dnsErrText(err error) string {
	if de, ok := err.(*net.DNSError); ok {
		return de.Err
	}
	return err.Error()
}

// port converts a Port argument: a number in [lo..65535] or a service name.
func (b *builder) port(a parser.Arg, lo int64) (int, bool) {
	if a.Kind == parser.Number {
		n, ok := b.intArg(a, lo, 65535)
		return int(n), ok
	}
	p, err := net.LookupPort("tcp", a.Text)
	if err != nil || p == 0 {
		b.errorf(a.Span, "unknown port name")
		return 0, false
	}
	return p, true
}

func listenerCheckURL(b *builder, l *Listener, n *parser.Node, u []unit) {
	if l.CheckURL != nil {
		b.errorf(stmtSpan(n), "CheckURL multiple pattern")
		return
	}
	l.CheckURL = b.compile(u[0].arg, MatchRegex, b.cfg.IgnoreCase)
}

// errorFile stores a custom error page for a status code.
func (b *builder) errorFile(l *Listener, code, file parser.Arg, allowed map[int64]bool) {
	c, ok := b.intArg(code, 0, maxInt)
	if !ok {
		return
	}
	if allowed != nil && !allowed[c] {
		b.errorf(code.Span, "unsupported status code")
		return
	}
	page, ok := b.errorPage(file)
	if !ok {
		return
	}
	if l.ErrorFiles == nil {
		l.ErrorFiles = map[int]*ErrorPage{}
	}
	l.ErrorFiles[int(c)] = page
}

func listenerErrNoSSL(b *builder, l *Listener, _ *parser.Node, u []unit) {
	status := int64(400)
	if len(u) == 2 {
		var ok bool
		if status, ok = b.intArg(u[0].arg, 400, 599); !ok {
			return
		}
	}
	page, ok := b.errorPage(u[len(u)-1].arg)
	if !ok {
		return
	}
	if l.ErrNoSSL == nil {
		l.ErrNoSSL = &ErrNoSSL{}
	}
	l.ErrNoSSL.Status, l.ErrNoSSL.Page = int(status), page
}

func listenerNoSSLRedirect(b *builder, l *Listener, _ *parser.Node, u []unit) {
	code := 302
	if len(u) == 2 {
		c, ok := b.intArg(u[0].arg, 0, maxInt)
		if !ok {
			return
		}
		if c != 301 && c != 302 && c != 307 {
			b.errorf(u[0].arg.Span, "invalid status code")
			return
		}
		code = int(c)
	}
	url := u[len(u)-1].arg
	if !redirectURLRe.MatchString(url.Text) {
		b.errorf(url.Span, "bad URL")
		return
	}
	if l.ErrNoSSL == nil {
		l.ErrNoSSL = &ErrNoSSL{}
	}
	l.ErrNoSSL.Redirect, l.ErrNoSSL.Code = url.Text, code
}

// rewriteLocation converts RewriteLocation 0..2 [0|1].
func (b *builder) rewriteLocation(u []unit) (int, bool, bool) {
	v, ok := b.intArg(u[0].arg, 0, 2)
	if !ok {
		return 0, false, false
	}
	url := true
	if len(u) > 1 {
		w, ok := b.intArg(u[1].arg, 0, 1)
		if !ok {
			return 0, false, false
		}
		url = w == 1
	}
	return int(v), url, true
}
