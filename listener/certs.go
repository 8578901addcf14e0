package listener

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
)

// certSet is an immutable snapshot of a listener's certificates with its
// SNI index. Handshakes read it through an atomic pointer, so a reload
// swaps certificates without a lock and without touching connections.
type certSet struct {
	certs []*tls.Certificate // config order; certs[0] is the default
	exact map[string][]int   // lower-case DNS name -> certs
	wild  map[string][]int   // "example.com" for "*.example.com"
	// zproxy picks the first certificate in config order whose CN or a
	// SAN matches, a "*" standing for any run of [-a-z0-9] (ssl.c
	// parseCertCN), so a CN of "*" matches every dotless name.
	zproxy bool
}

func newCertSet(certs []*tls.Certificate, zproxy bool) *certSet {
	s := &certSet{certs: certs, exact: map[string][]int{}, wild: map[string][]int{}, zproxy: zproxy}
	for i, c := range certs {
		if c.Leaf == nil {
			continue
		}
		for _, n := range certNames(c.Leaf) {
			n = strings.ToLower(n)
			if rest, ok := strings.CutPrefix(n, "*."); ok {
				s.wild[rest] = append(s.wild[rest], i)
			} else {
				s.exact[n] = append(s.exact[n], i)
			}
		}
	}
	return s
}

// certNames are the names SNI is matched against: the DNS SANs and, as
// OpenSSL-era Pound did for certificates without SANs, the CN.
func certNames(c *x509.Certificate) []string {
	if len(c.DNSNames) > 0 {
		return c.DNSNames
	}
	if c.Subject.CommonName != "" {
		return []string{c.Subject.CommonName}
	}
	return nil
}

// pick chooses the certificate for a ClientHello: an exact name match,
// then a wildcard match, each the first one whose key the client can
// use (an RSA and an ECDSA certificate may share a name); else the
// default, the first Cert of the listener, as in Pound.
func (s *certSet) pick(hello *tls.ClientHelloInfo) *tls.Certificate {
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if s.zproxy {
		return s.pickZproxy(name)
	}
	if name != "" {
		if c := s.first(hello, s.exact[name]); c != nil {
			return c
		}
		if dot := strings.IndexByte(name, '.'); dot > 0 {
			if c := s.first(hello, s.wild[name[dot+1:]]); c != nil {
				return c
			}
		}
	}
	return s.certs[0]
}

// pickZproxy is zproxy's SNI choice (zproxy_sni_servername_cb).
func (s *certSet) pickZproxy(name string) *tls.Certificate {
	if name == "" {
		return s.certs[0]
	}
	for _, c := range s.certs {
		if c.Leaf == nil {
			continue
		}
		if zproxyNameMatch(strings.ToLower(c.Leaf.Subject.CommonName), name) {
			return c
		}
		for _, n := range c.Leaf.DNSNames {
			if zproxyNameMatch(strings.ToLower(n), name) {
				return c
			}
		}
	}
	return s.certs[0]
}

// zproxyNameMatch matches name against a certificate name in which each
// "*" stands for any run (possibly empty) of lower-case letters, digits
// and '-'.
func zproxyNameMatch(pattern, name string) bool {
	if pattern == "" {
		return false
	}
	for len(pattern) > 0 {
		if pattern[0] != '*' {
			if len(name) == 0 || name[0] != pattern[0] {
				return false
			}
			pattern, name = pattern[1:], name[1:]
			continue
		}
		pattern = pattern[1:]
		for i := 0; ; i++ {
			if zproxyNameMatch(pattern, name[i:]) || (pattern == "" && i == len(name)) {
				return true
			}
			if i == len(name) || !isLabelByte(name[i]) {
				return false
			}
		}
	}
	return name == ""
}

func isLabelByte(c byte) bool {
	return c == '-' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func (s *certSet) first(hello *tls.ClientHelloInfo, idx []int) *tls.Certificate {
	// The index already matched the name (CN included, which Go's own
	// name check ignores); only ask whether the client can use the key.
	h := *hello
	h.ServerName = ""
	for _, i := range idx {
		if h.SupportsCertificate(s.certs[i]) == nil {
			return s.certs[i]
		}
	}
	return nil
}
