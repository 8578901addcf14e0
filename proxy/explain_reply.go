package proxy

import (
	"bytes"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"lbd/config"
	"lbd/explain"
	"lbd/rules"
	"lbd/service"
)

// maxExplainBody bounds the reply body an explanation shows.
const maxExplainBody = 4 << 10

// queryClient parses the client address of a query (default 127.0.0.1).
func queryClient(s string) (netip.Addr, error) {
	if s == "" {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return a, fmt.Errorf("%w: client address %q: %v", ErrBadQuery, s, err)
	}
	return a.Unmap(), nil
}

// queryHead renders the request head a query describes. An absolute URL
// becomes origin-form plus a Host header (unless one is given), as a
// browser would send it to lbd.
func queryHead(q explain.Query) ([]byte, error) {
	if q.Method == "" || strings.ContainsAny(q.Method, " \t\r\n") {
		return nil, fmt.Errorf("%w: method %q", ErrBadQuery, q.Method)
	}
	target, host := q.URL, ""
	if i := strings.Index(target, "://"); i > 0 && !strings.HasPrefix(target, "/") {
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%w: URL %q", ErrBadQuery, q.URL)
		}
		host, target = u.Host, u.RequestURI()
	}
	if target == "" || strings.ContainsAny(target, " \t\r\n") {
		return nil, fmt.Errorf("%w: URL %q (want /path or http://host/path, without blanks)", ErrBadQuery, q.URL)
	}
	var b bytes.Buffer
	b.WriteString(q.Method + " " + target + " HTTP/1.1\r\n")
	hasHost := false
	for _, h := range q.Headers {
		name, _, ok := strings.Cut(h, ":")
		if !ok || name == "" || strings.ContainsAny(h, "\r\n") {
			return nil, fmt.Errorf("%w: header %q (want \"Name: value\")", ErrBadQuery, h)
		}
		hasHost = hasHost || strings.EqualFold(strings.TrimSpace(name), "Host")
	}
	if !hasHost {
		if host == "" {
			host = "localhost"
		}
		b.WriteString("Host: " + host + "\r\n")
	}
	for _, h := range q.Headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	if b.Len() > 64<<10 {
		return nil, fmt.Errorf("%w: request head of %d bytes", ErrBadQuery, b.Len())
	}
	return b.Bytes(), nil
}

// generated explains an error page lbd would write itself (writeError),
// rendered but not written or counted.
func (x *explainer) generated(status int, cause Cause, kind, why string) {
	c, st := x.c, x.st
	page := c.editGenerated(st, st.Errors.Page(c.req.Minor, status, cause))
	x.reply(status, kind, page, why)
}

// reply records a rendered reply and the outcome.
func (x *explainer) reply(status int, kind string, page []byte, why string) {
	rp := &explain.Reply{Status: status, Kind: kind, Why: why}
	head, body, _ := bytes.Cut(page, []byte(crlf+crlf))
	lines := strings.Split(string(head), crlf)
	if len(lines) > 1 {
		rp.Head = lines[1:]
	}
	for _, l := range rp.Head {
		if v, ok := strings.CutPrefix(l, "Location: "); ok {
			rp.Location = v
		}
	}
	if len(body) > maxExplainBody {
		body = append(body[:maxExplainBody:maxExplainBody], "…"...)
	}
	rp.Body = string(body)
	x.r.Reply = rp
	x.r.Outcome = fmt.Sprintf("lbd answers %d itself (%s): %s", status, kind, why)
}

// special explains a request for a special backend (conn.special).
func (x *explainer) special(svc *service.Service, why string) {
	st := x.st
	b := svc.Special
	x.r.Backend = &explain.Backend{Index: 0, ID: b.Kind.String(), Address: b.Pos.String(), Via: "special"}
	switch b.Kind {
	case config.BackendRedirect:
		x.redirect(b.Rare().Redirect, why)
	case config.BackendError:
		x.errorBackend(b, why)
	case config.BackendLua:
		x.luaDecides(&rules.DryScriptError{Call: b.Rare().Lua})
	default:
		status := 200
		switch {
		case b.Kind == config.BackendMetrics && st.Metrics == nil,
			b.Kind == config.BackendControl && st.Control == nil,
			b.Kind == config.BackendDashboard && st.Dashboard == nil:
			status = 503
		}
		what := map[config.BackendKind]string{
			config.BackendMetrics: "the OpenMetrics exposition", config.BackendControl: "the control API",
			config.BackendFile: "a file from " + b.Rare().Dir, config.BackendACME: "an ACME challenge file from " + b.Rare().Dir,
			config.BackendSuccess: "an empty 200", config.BackendDashboard: "the live dashboard",
		}[b.Kind]
		if what == "" {
			what = "its " + b.Kind.String() + " page"
		}
		x.r.Reply = &explain.Reply{Status: status, Kind: b.Kind.String(), Why: why}
		x.r.Outcome = fmt.Sprintf("service %d%s: lbd answers with %s", *x.r.Service, quoted(svc.Name), what)
	}
}

// redirect explains a Redirect backend (conn.redirect).
func (x *explainer) redirect(r *config.Redirect, why string) {
	c, st := x.c, x.st
	var loc []byte
	var code int
	if st.Dialect == config.DialectZproxy {
		loc, code = c.zproxyLocation(r), zproxyRedirectCode(r.Code)
	} else {
		var ok bool
		if loc, ok = c.poundLocation(st, r); !ok {
			x.generated(500, CauseNone, "error", "the redirect URL refers to a group that did not match")
			return
		}
		if code = r.Code; code == 0 {
			code = 302
		}
	}
	reply := c.editGenerated(st, c.redirectReply(st.Dialect, code, loc))
	x.reply(code, "redirect", reply, why)
	x.r.Outcome = fmt.Sprintf("lbd redirects with %d to %s", code, loc)
}

// errorBackend explains an Error backend (conn.errorBackend).
func (x *explainer) errorBackend(b *config.Backend, why string) {
	c, st := x.c, x.st
	ruled := hasResponseRules(st, c.ex.svc, c.editsFor(st, c.ex.svc))
	var page []byte
	switch {
	case b.Rare().Page != nil:
		page = renderError(st.Dialect, c.req.Minor, b.Rare().Status, b.Rare().Page.Body)
	default:
		page = st.Errors.Page(c.req.Minor, b.Rare().Status, CauseNone)
	}
	if b.Rare().Page == nil && !ruled {
		page = c.editGenerated(st, page) // as writeError does
	}
	if ruled {
		var err error
		if page, _, err = c.ruledErrorPage(st, page, b.Rare().Status); err != nil {
			if !x.luaDecides(err) {
				x.generated(500, CauseNone, "error", "a response rule failed on the error page: "+err.Error())
			}
			return
		}
	}
	x.reply(b.Rare().Status, "error", page, why+" (Error "+strconv.Itoa(b.Rare().Status)+")")
}
