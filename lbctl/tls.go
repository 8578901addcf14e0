package lbctl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tlsConfig is the TLS configuration for target: nil (unused) unless it
// is an https:// URL, so that a socket never trips over a TLS setting.
func (r *runner) tlsConfig(srv *serverDefn, target string) (*tls.Config, error) {
	if !strings.HasPrefix(target, "https://") {
		return nil, nil
	}
	s, err := r.tlsSettings(srv)
	if err != nil {
		return nil, err
	}
	return s.config()
}

// tlsSettings are the TLS options of an https:// control URL: those of
// the selected server in ~/.poundctl, overridden field by field by -k, -C
// and -K.
type tlsSettings struct {
	verify     bool
	caFile     string
	caPath     string
	clientCert string
}

// tlsSettings merges the command line into the server's settings. -C
// names a file or, like poundctl's, a directory (CAPath).
func (r *runner) tlsSettings(srv *serverDefn) (tlsSettings, error) {
	s := tlsSettings{verify: srv.verify, caFile: srv.caFile, caPath: srv.caPath, clientCert: srv.clientCert}
	if r.opt.insecure {
		s.verify = false
	}
	if r.opt.caFile != "" {
		fi, err := os.Stat(r.opt.caFile)
		switch {
		case err != nil:
			return s, fmt.Errorf("can't stat %s: %w", r.opt.caFile, pathErr(err))
		case fi.IsDir():
			s.caPath = r.opt.caFile
		default:
			s.caFile = r.opt.caFile
		}
	}
	if r.opt.clientCert != "" {
		s.clientCert = r.opt.clientCert
	}
	return s, nil
}

// config builds the client's TLS configuration. Without CAFile or CAPath
// the system's CA certificates are trusted (poundctl would refuse to
// verify against nothing); with Verify off nothing is checked, as
// poundctl -k.
func (s tlsSettings) config() (*tls.Config, error) {
	tc := &tls.Config{}
	if !s.verify {
		tc.InsecureSkipVerify = true // asked for with -k or Verify no
	} else if s.caFile != "" || s.caPath != "" {
		pool, err := loadCAs(s.caFile, s.caPath)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if s.clientCert != "" {
		// poundctl reads certificate chain and key from the same PEM file.
		cert, err := tls.LoadX509KeyPair(s.clientCert, s.clientCert)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s: %w", s.clientCert, pathErr(err))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// loadCAs reads the PEM certificates of file and of every file in dir.
// dir need not be hashed with c_rehash as OpenSSL's CApath must; files in
// it without certificates are skipped. Each source must hold at least one
// certificate, so that a wrong name fails here rather than as "unknown
// authority" later.
func loadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("CA file %s: %w", file, pathErr(err))
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificates in it", file)
		}
	}
	if dir == "" {
		return pool, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("CA directory %s: %w", dir, pathErr(err))
	}
	found := false
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		pem, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && pool.AppendCertsFromPEM(pem) {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("CA directory %s: no PEM certificates in it", dir)
	}
	return pool, nil
}

// pathErr drops the "open FILE:" prefix of an error whose message names
// the file already.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
