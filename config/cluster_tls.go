package config

import (
	"crypto/tls"
	"strings"

	"lbd/parser"
)

// clusterTLS reads the TLS statements of the Cluster section n into
// cl.TLS once every statement is known: a CAFile, ClientCert, ClientKey
// or ServerName without "TLS 1" is an error rather than silently left in
// clear text. It reports whether the section is sound.
func (b *builder) clusterTLS(cl *Cluster, n *parser.Node) bool {
	args := map[string]*parser.Arg{}
	for _, ch := range n.Children {
		for _, name := range []string{"CAFile", "ClientCert", "ClientKey", "ServerName"} {
			if ch.Is(name) && len(ch.Args) == 1 {
				a := ch.Args[0]
				args[name] = &a
			}
		}
	}
	if cl.TLS == nil {
		for _, name := range []string{"CAFile", "ClientCert", "ClientKey", "ServerName"} {
			if a := args[name]; a != nil {
				b.errorf(a.Span, "%s is only used with TLS 1", name)
				return false
			}
		}
		return true
	}
	if strings.HasPrefix(cl.Redis, "/") {
		b.errorf(stmtSpan(n), "TLS needs a Redis host:port: Redis serves TLS on a TCP port only")
		return false
	}
	ok := true
	if a := args["CAFile"]; a != nil {
		if cl.TLS.CA = b.fileData(*a); cl.TLS.CA == nil || !b.checkPEMCerts(a.Span, cl.TLS.CA) {
			ok = false
		}
	}
	if a := args["ServerName"]; a != nil {
		if a.Text == "" {
			b.errorf(a.Span, "empty ServerName")
			ok = false
		}
		cl.TLS.ServerName = a.Text
	}
	cert, key := args["ClientCert"], args["ClientKey"]
	switch {
	case key != nil && cert == nil:
		b.errorf(key.Span, "ClientKey without ClientCert")
		ok = false
	case cert != nil:
		if cl.TLS.Cert = b.clientCert(*cert, key); cl.TLS.Cert == nil {
			ok = false
		}
	}
	return ok
}

// clientCert loads the client certificate chain of cert and its key: from
// the file of key, or else from the same file.
func (b *builder) clientCert(cert parser.Arg, key *parser.Arg) *CertFile {
	path, certPEM, ok := b.readFile(cert)
	if !ok {
		return nil
	}
	keyPEM, at, what := certPEM, cert, path
	if key != nil {
		var keyPath string
		if keyPath, keyPEM, ok = b.readFile(*key); !ok {
			return nil
		}
		at, what = *key, path+" with key "+keyPath
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		b.errorf(at.Span, "%s: can't load the client certificate and key: %s", what, err.Error())
		return nil
	}
	return &CertFile{Path: path, Cert: c}
}
