package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"lbd/config"
)

// tlsConfig is the TLS of the connections to Redis and to the Sentinels
// (nil: clear text). Certificates are always verified: against the CA
// file, or the system's roots without one; the name checked is
// ServerName, or else the host of each address dialled (crypto/tls takes
// it from the address when ServerName is empty, so each Sentinel and the
// master they name are checked under their own names).
func tlsConfig(c *config.ClusterTLS) *tls.Config {
	if c == nil {
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CA != nil {
		tc.RootCAs = x509.NewCertPool()
		// The configuration checked that the file holds certificates.
		tc.RootCAs.AppendCertsFromPEM(c.CA.Data)
	}
	if c.Cert != nil {
		tc.Certificates = []tls.Certificate{c.Cert.Cert}
	}
	return tc
}

// Failure kinds of an exchange with Redis: what the operator must fix
// differs, so the log says which.
const (
	failUnreachable = "unreachable"
	failAuth        = "authentication failed"
	failTLSVerify   = "TLS certificate verification failed"
	failTLS         = "TLS handshake failed"
)

// failureKind classifies err. Redis answers WRONGPASS to a bad password
// and NOAUTH to a missing one; a server certificate lbd cannot verify
// fails here, one that Redis refuses (no or a wrong client certificate)
// comes back as a TLS alert.
func failureKind(err error) string {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		if strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOAUTH") {
			return failAuth
		}
	}
	var verr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var invalid x509.CertificateInvalidError
	if errors.As(err, &verr) || errors.As(err, &unknownCA) || errors.As(err, &badHost) || errors.As(err, &invalid) {
		return failTLSVerify
	}
	var alert tls.AlertError
	var recErr tls.RecordHeaderError
	if errors.As(err, &alert) || errors.As(err, &recErr) || strings.Contains(err.Error(), "tls: ") {
		return failTLS
	}
	return failUnreachable
}

// failureHint tells the operator where to look for a kind of failure.
func failureHint(kind string) string {
	switch kind {
	case failAuth:
		return "check the Cluster section's Username and Password"
	case failTLSVerify:
		return "check CAFile and ServerName against the server's certificate"
	case failTLS:
		return "check TLS, ClientCert and the server's TLS settings"
	}
	return "serving from the local state until it is back"
}
