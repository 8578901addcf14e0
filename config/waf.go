package config

import (
	"errors"

	"lbd/parser"
	"lbd/waf"
)

// addWAFDirectives registers the firewall statements of a listener:
// zproxy's WafRules and ErrWAF, and lbd's WafParanoia and
// WafAnomalyThreshold for the built-in Core Rule Set. Pound files may
// use them too (an lbd extension).
func addWAFDirectives(t table[*Listener]) {
	t.add("WafRules", "s", func(b *builder, l *Listener, n *parser.Node, u []unit) {
		b.lst[l].noteWAF(n)
		w := listenerWAF(l)
		name := u[0].arg.Text
		if name != waf.CRS {
			name = b.resolve(name)
		}
		w.Rules = append(w.Rules, name)
		b.lst[l].wafArgs = append(b.lst[l].wafArgs, u[0].arg)
	})
	t.add("ErrWAF", "n?s", func(b *builder, l *Listener, n *parser.Node, u []unit) {
		b.lst[l].noteWAF(n)
		page, ok := b.errorPage(u[len(u)-1].arg)
		if !ok {
			return
		}
		w := listenerWAF(l)
		if len(u) == 1 {
			w.Page = page
			return
		}
		code, ok := b.intArg(u[0].arg, 300, 599) // zproxy: "Range is 300-599"
		if !ok {
			return
		}
		if w.Pages == nil {
			w.Pages = map[int]*ErrorPage{}
		}
		w.Pages[int(code)] = page
	})
	t.add("WafParanoia", "n", func(b *builder, l *Listener, n *parser.Node, u []unit) {
		b.lst[l].noteWAF(n)
		if n, ok := b.intArg(u[0].arg, 1, 4); ok {
			listenerWAF(l).Paranoia = int(n)
			b.lst[l].wafTuned = &u[0].arg
		}
	})
	t.add("WafAnomalyThreshold", "n", func(b *builder, l *Listener, n *parser.Node, u []unit) {
		b.lst[l].noteWAF(n)
		if n, ok := b.intArg(u[0].arg, 1, 10000); ok {
			listenerWAF(l).Threshold = int(n)
			b.lst[l].wafTuned = &u[0].arg
		}
	})
}

// noteWAF remembers the first firewall statement of the listener.
func (ex *listenerExtra) noteWAF(n *parser.Node) {
	if !ex.wafSeen {
		ex.wafSeen, ex.wafStmt = true, stmtSpan(n)
	}
}

func listenerWAF(l *Listener) *WAF {
	if l.WAF == nil {
		l.WAF = &WAF{}
	}
	return l.WAF
}

// compileWAF loads the listener's rule files once its block is read. An
// error names the rule file and line, and is reported at the WafRules
// statement that led to it.
func (b *builder) compileWAF(l *Listener, ex *listenerExtra) {
	w := l.WAF
	if w == nil {
		return
	}
	if len(w.Rules) == 0 {
		// ErrWAF or a tuning statement without rules: nothing to apply
		// them to, and saying nothing would hide a missing WafRules.
		b.errorf(ex.wafStmt, "WAF settings without WafRules")
		return
	}
	if ex.wafTuned != nil && !contains(w.Rules, waf.CRS) {
		b.errorf(ex.wafTuned.Span, "WafParanoia and WafAnomalyThreshold apply to the built-in rule set: add WafRules %q", waf.CRS)
		return
	}
	eng, err := waf.Compile(w.Rules, waf.Options{Paranoia: w.Paranoia, Threshold: w.Threshold})
	if err != nil {
		b.errorf(ex.wafArgFor(w.Rules, err).Span, "%s", err.Error())
		return
	}
	w.Engine = eng
}

// wafArgFor is the WafRules argument whose file the error comes from
// (the first one when that is unknown).
func (ex *listenerExtra) wafArgFor(rules []string, err error) parser.Arg {
	var we *waf.Error
	if errors.As(err, &we) {
		for i, r := range rules {
			if r == we.Top {
				return ex.wafArgs[i]
			}
		}
	}
	return ex.wafArgs[0]
}
