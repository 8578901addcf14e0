package proxy

import (
	"net/http"

	"lbd/http1"
)

// Challenges answers ACME HTTP-01 validation requests for the tokens of
// lbd's automatic certificates (package acmecert). A listener without
// automatic certificates has none, and costs one nil check a request.
type Challenges interface {
	// AnswerChallenge writes the key authorisation and reports true
	// when r asks for a token being presented; false leaves r alone.
	AnswerChallenge(w http.ResponseWriter, r *http.Request) bool
}

// isChallenge reports whether the request asks below the HTTP-01 path.
func isChallenge(req *http1.Request) bool {
	p := req.Path
	return req.MethodID == http1.MethodGET && len(p) > len(acmePrefix) && string(p[:len(acmePrefix)]) == acmePrefix
}

// acmeChallenge answers an HTTP-01 validation before any service sees
// the request (so no configuration change is needed on port 80). A
// token lbd does not know is left to the services, Pound's ACME "dir"
// among them. done reports that it answered; ok is as for handle.
func (c *conn) acmeChallenge(st *Listener) (done, ok bool) {
	req, err := http.NewRequest(http.MethodGet, string(c.req.Path), nil)
	if err != nil {
		return false, false
	}
	if host, found := c.reqHeader("Host"); found {
		req.Host = string(host)
	}
	req.RemoteAddr = c.nc.RemoteAddr().String()
	rec := &recorder{header: http.Header{}, status: 200}
	if !st.Challenges.AnswerChallenge(rec, req) {
		return false, false
	}
	return true, c.writeRecorded(st, rec)
}
