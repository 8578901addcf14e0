package config

import (
	"fmt"
	"strings"

	"lbd/parser"
)

// zproxyOnly are keywords that exist in zproxy but not in any Pound
// generation; one of them anywhere makes the file a zproxy configuration.
// RoutingPolicy is not one: it chooses zproxy's balancing for its own
// service and changes nothing else in a Pound file. Nor are WafRules and
// ErrWAF, which lbd accepts in Pound files too.
var zproxyOnly = map[string]bool{
	"weight": true, "connlimit": true, "nfmark": true,
	"name": true, "rewriteurl": true, "addrequestheader": true,
	"removerequestheader": true, "addresponseheader": true,
	"removeresponseheader": true, "replaceheader": true,
	"stricttransportsecurity": true, "redirectappend": true,
	"redirectdynamic": true, "errnossl": true, "nosslredirect": true,
	"err": true, "rewritehost": true,
	"ignore100continue": true,
}

// detectDialect decides, before any directive is interpreted, whether the
// file is written for zproxy; defaults that differ (backend Priority)
// depend on it. The reason names the statement that decided.
func detectDialect(nodes []*parser.Node) (Dialect, string) {
	if n := findZproxy(nodes, ""); n != nil {
		return DialectZproxy, fmt.Sprintf("the file uses zproxy's %s (%s:%d)", n.Keyword, n.Span.Start.File, n.Span.Start.Line)
	}
	return DialectPound, "the file uses no zproxy-only statement"
}

func findZproxy(nodes []*parser.Node, parent string) *parser.Node {
	var buf [32]byte
	for _, n := range nodes {
		kw := lowerKey(&buf, n.Keyword)
		if zproxyOnly[string(kw)] {
			return n
		}
		if parent == "session" {
			if string(kw) == "path" || string(kw) == "domain" {
				return n
			}
			if string(kw) == "type" && len(n.Args) > 0 {
				t := strings.ToUpper(n.Args[0].Text)
				if t == "COOKIEINSERT" || t == "BACKENDCOOKIE" {
					return n
				}
			}
		}
		if n.Block {
			if z := findZproxy(n.Children, string(kw)); z != nil {
				return z
			}
		}
	}
	return nil
}
