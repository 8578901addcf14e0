// Package acmecert obtains and renews lbd's automatic certificates: the
// names a ListenHTTPS lists with ACMECert, from the CA the ACMEAccount
// section names, through RFC 8555 (ACME).
//
// # Why certmagic
//
// The protocol, the challenge solvers, the renewal schedule, OCSP
// stapling, the retries and the cluster lock all come from
// github.com/caddyserver/certmagic (which speaks ACME through
// github.com/mholt/acmez). The alternative, golang.org/x/crypto/acme, is
// the protocol alone: renewal timing, backoff on errors and Retry-After,
// OCSP stapling, storage and a lock shared by a cluster would all have
// been lbd's own code, written for this issue and tested only by it.
// certmagic has run Caddy's automatic HTTPS for years, on every public
// CA, and its Storage interface (Load/Store/List/Lock/Unlock) is exactly
// the seam a cluster needs: this package implements it on the cluster's
// Redis (redis.go), and uses certmagic's FileStorage otherwise. lbd
// writes no ACME protocol code.
//
// # Shape
//
// A Manager is built from the configuration's ACMEAccount and the names
// of every listener. It never binds a socket of its own: lbd's HTTP
// listeners answer HTTP-01 (proxy calls AnswerChallenge before routing)
// and its HTTPS listeners TLS-ALPN-01 (listener calls Certificate, which
// returns the challenge certificate for an acme-tls/1 hello). certmagic's
// solvers are pointed at those very ports, find them taken, and leave
// the answering to lbd. DNS-01 is not offered.
//
// Start obtains in the background: listeners serve at once, and a name
// without its certificate yet gets the listener's first Cert (or, on a
// listener without one, a failed handshake). Certificates are renewed
// when between 30 % and a third of their lifetime remains (the point is
// drawn once per process, so a cluster's members do not all try at the
// same moment; the lock decides anyway), and the cache swaps the new one
// in place: handshakes under way keep the certificate they picked. A CA
// that cannot be reached changes nothing that is served; the error is
// kept per name for the control API and the metrics, and certmagic
// retries with backoff (and as the CA's Retry-After says).
package acmecert
