package listener

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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

// certStore holds a listener's certificates and reloads single files
// when they change on disk. A file that does not load keeps its
// previous certificate: a half-written or mismatched file must never
// take a site down.
type certStore struct {
	set atomic.Pointer[certSet]

	mu    sync.Mutex // serialises reloads
	paths []string   // file of each certificate, config order
	data  [][]byte   // bytes last loaded from each file
	// zproxy selects zproxy's SNI matching (see certSet).
	zproxy bool
	// auto supplies the automatic certificates, asked first (nil: none).
	auto Automatic
}

// newCertStore starts from the certificates the configuration loaded.
func newCertStore(paths []string, certs []tls.Certificate, zproxy bool) *certStore {
	st := &certStore{paths: paths, data: make([][]byte, len(paths)), zproxy: zproxy}
	ptrs := make([]*tls.Certificate, len(certs))
	for i := range certs {
		c := certs[i]
		if c.Leaf == nil && len(c.Certificate) > 0 {
			// The configuration parsed it already; a nil Leaf only
			// leaves the certificate out of the name index.
			c.Leaf, _ = x509.ParseCertificate(c.Certificate[0])
		}
		ptrs[i] = &c
		// Unreadable now, nil: the next reload reads it again and
		// replaces the certificate only if the file then loads.
		st.data[i], _ = os.ReadFile(paths[i])
	}
	st.set.Store(newCertSet(ptrs, zproxy))
	return st
}

// getCertificate is the tls.Config hook.
func (st *certStore) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if st.auto != nil {
		if c, err := st.auto.Certificate(hello); c != nil || err != nil {
			return c, err
		}
	}
	s := st.set.Load()
	if len(s.certs) == 0 {
		if st.auto != nil {
			if c := st.auto.Fallback(hello); c != nil {
				return c, nil
			}
		}
		return nil, errNoCert
	}
	return s.pick(hello), nil
}

var errNoCert = errors.New("no certificate")

// reloaded is the outcome for one certificate file whose content
// changed: Err says why its previous certificate was kept.
type reloaded struct {
	Path    string
	Subject string
	Err     error
}

// Reload re-reads the certificate files under dir ("" = all) and swaps
// in those whose content changed and loads.
func (st *certStore) Reload(dir string) []reloaded {
	st.mu.Lock()
	defer st.mu.Unlock()
	old := st.set.Load()
	certs := append([]*tls.Certificate(nil), old.certs...)
	var out []reloaded
	changed := false
	for i, p := range st.paths {
		if dir != "" && !underDir(p, dir) {
			continue
		}
		data, err := os.ReadFile(p)
		if err == nil && bytes.Equal(data, st.data[i]) {
			continue
		}
		c, err := loadCert(data, err)
		if err != nil {
			out = append(out, reloaded{Path: p, Err: err})
			continue
		}
		st.data[i], certs[i], changed = data, c, true
		out = append(out, reloaded{Path: p, Subject: c.Leaf.Subject.String()})
	}
	if changed {
		st.set.Store(newCertSet(certs, st.zproxy))
	}
	return out
}

// loadCert validates a PEM chain with its key as Pound requires of a
// Cert file: it must parse and the key must match the leaf.
func loadCert(data []byte, readErr error) (*tls.Certificate, error) {
	if readErr != nil {
		return nil, readErr
	}
	c, err := tls.X509KeyPair(data, data)
	if err != nil {
		return nil, err
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

func underDir(path, dir string) bool {
	return strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
