package config

import (
	"strings"

	"lbd/parser"
)

// zproxyOnly are keywords that exist in zproxy but not in any Pound
// generation; one of them anywhere makes the file a zproxy configuration.
var zproxyOnly = map[string]bool{
	"routingpolicy": true, "weight": true, "connlimit": true, "nfmark": true,
	"name": true, "rewriteurl": true, "addrequestheader": true,
	"removerequestheader": true, "addresponseheader": true,
	"removeresponseheader": true, "replaceheader": true,
	"stricttransportsecurity": true, "redirectappend": true,
	"redirectdynamic": true, "errnossl": true, "nosslredirect": true,
	"err": true, "errwaf": true, "wafrules": true, "rewritehost": true,
	"ignore100continue": true,
}

// detectDialect decides, before any directive is interpreted, whether the
// file is written for zproxy; defaults that differ (backend Priority)
// depend on it.
func detectDialect(nodes []*parser.Node) Dialect {
	if hasZproxy(nodes, "") {
		return DialectZproxy
	}
	return DialectPound
}

func hasZproxy(nodes []*parser.Node, parent string) bool {
	var buf [32]byte
	for _, n := range nodes {
		kw := lowerKey(&buf, n.Keyword)
		if zproxyOnly[string(kw)] {
			return true
		}
		if parent == "session" {
			if string(kw) == "path" || string(kw) == "domain" {
				return true
			}
			if string(kw) == "type" && len(n.Args) > 0 {
				t := strings.ToUpper(n.Args[0].Text)
				if t == "COOKIEINSERT" || t == "BACKENDCOOKIE" {
					return true
				}
			}
		}
		if n.Block && hasZproxy(n.Children, lower(n.Keyword)) {
			return true
		}
	}
	return false
}
