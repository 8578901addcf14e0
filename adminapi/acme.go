package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// lbd's automatic certificates (an extension of both sockets):
//
//	GET  /acme         every automatic name: its certificate (issuer,
//	                   serial, validity, next renewal, OCSP staple) and
//	                   the outcome of the last attempt
//	POST /acme/renew   {"name": "www.example.com"}: renew now, answer
//	                   when done (or failed: 502 with the CA's error)
//
// Without an ACMEAccount section both answer 404 and say so.

// ACMEStatus is the automatic certificates' state; nil without an
// ACMEAccount section.
type ACMEStatus struct {
	Directory string
	Certs     []ACMECert
}

// ACMECert is one automatic name (see acmecert.Status).
type ACMECert struct {
	Name                           string
	Issuer, Serial                 string
	NotBefore, NotAfter, NextRenew time.Time
	Stapled, Busy                  bool
	LastError                      string
	LastErrorAt                    time.Time
	Obtained, Failures             uint64
}

// ACMERenewer is what POST /acme/renew needs of the Controller. An
// unknown name wraps ErrNotFound; a CA failure is any other error.
type ACMERenewer interface {
	RenewCertificate(ctx context.Context, name string) error
}

// renewTimeout bounds a forced renewal (an order with its validations),
// inside the control server's write timeout so the answer still goes out.
const renewTimeout = writeTimeout - 5*time.Second

var errNoACME = "this lbd has no automatic certificates: the configuration has no ACMEAccount section"

// ownsACME reports whether path is an /acme endpoint.
func ownsACME(p string) bool {
	p = strings.ToLower(strings.TrimSuffix(p, "/"))
	return p == "/acme" || p == "/acme/renew"
}

// acme serves GET /acme and POST /acme/renew.
func (x *lbdExtensions) acme(w http.ResponseWriter, r *http.Request) {
	st := x.c.State().ACME
	renew := strings.EqualFold(strings.TrimSuffix(r.URL.Path, "/"), "/acme/renew")
	switch {
	case st == nil:
		writeJSONError(w, http.StatusNotFound, errNoACME)
	case !renew && r.Method != http.MethodGet:
		writeJSONError(w, http.StatusMethodNotAllowed, "use GET /acme")
	case !renew:
		writeJSON(w, http.StatusOK, encodeJSON(acmeObject(st), poundStyle(2)))
	case r.Method != http.MethodPost:
		writeJSONError(w, http.StatusMethodNotAllowed, `use POST /acme/renew with {"name": "host.example"}`)
	default:
		x.acmeRenew(w, r)
	}
}

func (x *lbdExtensions) acmeRenew(w http.ResponseWriter, r *http.Request) {
	rn, ok := x.c.(ACMERenewer)
	if !ok {
		writeJSONError(w, http.StatusNotImplemented, "this server cannot renew certificates")
		return
	}
	var q struct {
		Name string `json:"name"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err == nil {
		err = json.Unmarshal(body, &q)
	}
	if err != nil || q.Name == "" {
		writeJSONError(w, http.StatusBadRequest, `malformed request: want {"name": "host.example"}`)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), renewTimeout)
	defer cancel()
	if err := rn.RenewCertificate(ctx, q.Name); err != nil {
		status := http.StatusBadGateway // the CA (or the storage) failed
		if errors.Is(err, ErrNotFound) {
			status = http.StatusNotFound
		}
		writeJSONError(w, status, err.Error())
		return
	}
	for _, c := range x.c.State().ACME.Certs {
		if c.Name == strings.ToLower(q.Name) {
			writeJSON(w, http.StatusOK, encodeJSON(jobject{}.add("result", "ok").add("certificate", acmeCertObject(&c)), poundStyle(0)))
			return
		}
	}
	writeJSON(w, http.StatusOK, encodeJSON(jobject{}.add("result", "ok"), poundStyle(0)))
}

func acmeObject(st *ACMEStatus) jobject {
	certs := jarray{}
	for i := range st.Certs {
		certs = append(certs, acmeCertObject(&st.Certs[i]))
	}
	return jobject{}.add("directory", st.Directory).add("certificates", certs)
}

func acmeCertObject(c *ACMECert) jobject {
	opt := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	return jobject{}.add("name", c.Name).add("issuer", opt(c.Issuer)).add("serial", opt(c.Serial)).
		add("not_before", jsonTime(c.NotBefore)).add("not_after", jsonTime(c.NotAfter)).
		add("next_renewal", jsonTime(c.NextRenew)).add("ocsp_stapled", c.Stapled).
		add("ordering", c.Busy).add("last_error", opt(c.LastError)).add("last_error_at", jsonTime(c.LastErrorAt)).
		add("obtained", c.Obtained).add("failures", c.Failures)
}

// The automatic certificates' metric families.
var acmeFamilies = []metricFamily{
	{name: "lbd_acme_certificate_expiry_seconds", typ: "gauge", unit: "seconds", help: "Unix time the served certificate of an automatic name expires."},
	{name: "lbd_acme_certificate_renewal_seconds", typ: "gauge", unit: "seconds", help: "Unix time the certificate of an automatic name is due for renewal."},
	{name: "lbd_acme_certificate_valid", typ: "gauge", help: "Whether an automatic name has a certificate to serve (1) or not yet (0)."},
	{name: "lbd_acme_last_attempt_failed", typ: "gauge", help: "Whether the last order or renewal of an automatic name failed (1) or not (0)."},
	{name: "lbd_acme_obtained", typ: "counter", help: "Certificates obtained or renewed by this process."},
	{name: "lbd_acme_failures", typ: "counter", help: "Orders and renewals that failed."},
}

func init() { metricFamilies = append(metricFamilies, acmeFamilies...) }

// acme adds the samples of the automatic names (none without them).
func (e *exposition) acme(st *ACMEStatus, now time.Time) {
	if st == nil {
		return
	}
	for i := range st.Certs {
		c := &st.Certs[i]
		lbl := [][2]string{{"name", c.Name}}
		valid := !c.NotAfter.IsZero() && now.Before(c.NotAfter)
		if !c.NotAfter.IsZero() {
			e.add("lbd_acme_certificate_expiry_seconds", "", lbl, strconv.FormatInt(c.NotAfter.Unix(), 10))
			e.add("lbd_acme_certificate_renewal_seconds", "", lbl, strconv.FormatInt(c.NextRenew.Unix(), 10))
		}
		e.add("lbd_acme_certificate_valid", "", lbl, boolValue(valid))
		e.add("lbd_acme_last_attempt_failed", "", lbl, boolValue(c.LastError != ""))
		e.add("lbd_acme_obtained", "_total", lbl, strconv.FormatUint(c.Obtained, 10))
		e.add("lbd_acme_failures", "_total", lbl, strconv.FormatUint(c.Failures, 10))
	}
}
