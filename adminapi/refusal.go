package adminapi

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// Why a request was refused. Both products answer many refusals without
// a reason (Pound: its HTML error page; zproxy: a bare 400 or 405), and
// their own clients rely on exactly those bytes, so those stay the
// default. A client that asks for JSON (Accept: application/json, as
// lbctl does) gets the reason of every refusal instead:
//
//	{"result":"error","reason":"...","errors":["FILE:L.C-L.C: ...", ...]}
//
// in zproxy's result shape; "errors" lists every configuration error of a
// refused reload. zproxy's JSON error replies carry their reason anyway.

// apiError is a refused request: the status and why.
type apiError struct {
	status int
	reason string
	// errors are the configuration errors of a refused reload.
	errors []string
	// page marks, on an lbd extension of the Pound socket, a refusal
	// Pound itself answers with its HTML page (a 405), which stays the
	// default answer there.
	page bool
}

func refuse(status int, format string, a ...any) *apiError {
	return &apiError{status: status, reason: fmt.Sprintf(format, a...)}
}

// controllerRefusal is a failed Controller call as the API answers it:
// the status its sentinel says (500 without one) and its message.
func controllerRefusal(err error) *apiError {
	return &apiError{status: statusOrInternal(err), reason: reasonOf(err)}
}

// reloadRefusal is a failed reload: the running configuration stays.
// Every error of the file is listed (config.Load joins them).
func reloadRefusal(err error) *apiError {
	e := &apiError{status: statusOf(err), reason: "the configuration was not reloaded; the running one stays"}
	if e.status == http.StatusInternalServerError {
		e.status = http.StatusBadRequest
	}
	e.errors = errorLines(err)
	return e
}

// errorLines splits a joined error into its parts, one line each.
func errorLines(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		for _, line := range strings.Split(reasonOf(err), "\n") {
			if line != "" {
				out = append(out, line)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// wantsJSON reports whether the request's Accept header names
// application/json (or application/*), so a refusal is answered in JSON.
func wantsJSON(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && (mt == "application/json" || mt == "application/*") {
				return true
			}
		}
	}
	return false
}

// errorBody is the JSON of a refusal.
func errorBody(e *apiError) []byte {
	js, err := json.Marshal(struct {
		Result string   `json:"result"`
		Reason string   `json:"reason"`
		Errors []string `json:"errors,omitempty"`
	}{"error", e.reason, e.errors})
	if err != nil {
		// Only invalid UTF-8 could fail, and Marshal replaces it.
		js = []byte(`{"result":"error","reason":"unencodable reason"}`)
	}
	return append(js, '\n')
}
