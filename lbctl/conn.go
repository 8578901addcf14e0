package lbctl

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"

	"lbd/adminapi/client"
	"lbd/parser"
)

// The two control API dialects lbd serves.
const (
	dialectPound  = "pound"
	dialectZproxy = "zproxy"
)

// conn is an open control connection and the dialect it speaks.
type conn struct {
	c         *client.Client
	target    string
	dialect   string
	coreReply []byte // GET /core as fetched by detect, if it was
	// poundctl: invoked as poundctl, which prints only the status text
	// of a refused Pound request, as Pound's poundctl does (Pound's
	// testsuite compares it).
	poundctl bool
}

// connect resolves the socket and the dialect on first use.
func (r *runner) connect() (*conn, error) {
	if r.conn != nil {
		return r.conn, nil
	}
	srv, err := r.server()
	if err != nil {
		return nil, err
	}
	target, err := r.socket(srv)
	if err != nil {
		return nil, err
	}
	tc, err := r.tlsConfig(srv, target)
	if err != nil {
		return nil, err
	}
	c, err := client.NewTLS(target, r.opt.timeout, tc)
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c, target: target, dialect: r.opt.dialect, poundctl: r.prog == "poundctl"}
	if cn.dialect == "auto" {
		if err := detect(cn); err != nil {
			return nil, err
		}
	}
	r.infof("using socket %s (%s dialect)", target, cn.dialect)
	r.conn = cn
	return cn, nil
}

// socket finds the control socket: -s, then the URL of the selected
// server of ~/.poundctl, then the Control statement of -f, then
// $LBCTL_SOCKET, then the Control statement of the default configuration.
// The first three are poundctl's order; an explicit -f wins over the
// environment because it names one particular instance.
func (r *runner) socket(srv *serverDefn) (string, error) {
	switch {
	case r.opt.socket != "":
		return r.opt.socket, nil
	case srv.url != "":
		return srv.url, nil
	case r.opt.config != "":
		return controlFromConfig(r.opt.config)
	case r.env.Getenv("LBCTL_SOCKET") != "":
		return r.env.Getenv("LBCTL_SOCKET"), nil
	}
	if _, err := os.Stat(r.env.DefaultConfig); err == nil {
		return controlFromConfig(r.env.DefaultConfig)
	}
	return "", errors.New("can't determine control socket name; use the -s option")
}

// errNoControl is a configuration without a Control statement.
var errNoControl = errors.New("no Control statement; use the -s option")

// controlFromConfig reads the socket path from the top-level Control
// statement (`Control "path"` or the Control ... Socket "path" ... End
// block) of a configuration file, Includes expanded. Like poundctl it
// looks only for that statement, so a file lbd would refuse for other
// reasons still names its socket; a relative path is used as written
// (relative to the working directory, as lbd resolves it).
func controlFromConfig(path string) (string, error) {
	tree, diags := parser.ParseFile(path, parser.Options{})
	for _, n := range tree.Nodes {
		if !n.Is("Control") {
			continue
		}
		if !n.Block && len(n.Args) > 0 {
			return n.Args[0].Text, nil
		}
		for _, ch := range n.Children {
			if ch.Is("Socket") && len(ch.Args) > 0 {
				return ch.Args[0].Text, nil
			}
		}
	}
	if len(diags) > 0 && len(tree.Nodes) == 0 {
		return "", errors.New(diags[0].Error())
	}
	return "", fmt.Errorf("%s: %w", path, errNoControl)
}

// detect tells the dialects apart with GET /core, which only the Pound
// dialect serves (zproxy answers any unknown path with a bare 400). It is
// chosen over zproxy's GET /listeners so that the Pound request log, where
// control requests appear, shows a 200 rather than a 404 per lbctl run.
// The reply is kept for `core` and `version`. A remote URL is always a
// Pound Control service.
func detect(cn *conn) error {
	if strings.HasPrefix(cn.target, "http://") || strings.HasPrefix(cn.target, "https://") {
		cn.dialect = dialectPound
		return nil
	}
	_, reply, err := cn.c.Do(http.MethodGet, "/core", nil)
	var se *client.StatusError
	switch {
	case err == nil:
		cn.dialect, cn.coreReply = dialectPound, reply
	case errors.As(err, &se) && se.Status == http.StatusBadRequest:
		cn.dialect = dialectZproxy
	case errors.As(err, &se):
		cn.dialect = dialectPound // let the command report the failure
	default:
		return friendly(err)
	}
	return nil
}

// do sends a request and turns a failure into the message to print: the
// server's reason (refusal), or as poundctl on the Pound socket, the
// status text poundctl prints ("Not Found").
func (cn *conn) do(method, path string, body any) ([]byte, error) {
	_, reply, err := cn.c.Do(method, path, body)
	if err != nil {
		if cn.poundctl && cn.dialect == dialectPound {
			return reply, friendly(err)
		}
		return reply, replyError(err)
	}
	return reply, nil
}

// get is do for GET.
func (cn *conn) get(path string) ([]byte, error) { return cn.do(http.MethodGet, path, nil) }

// refusal is a request the server refused, with its reason and, for a
// reload, every error of the configuration file. It wraps the
// *client.StatusError, so callers can still look at the status.
type refusal struct {
	se     *client.StatusError
	reason string
	errors []string
}

// Error is the reason, then each configuration error on a line of its
// own.
func (e *refusal) Error() string {
	if len(e.errors) == 0 {
		return e.reason
	}
	return strings.TrimSuffix(e.reason, ".") + ":\n  " + strings.Join(e.errors, "\n  ")
}

func (e *refusal) Unwrap() error { return e.se }

// replyError reads {"result":"error","reason":...,"errors":[...]} from a
// failed reply (every refusal of lbd, as lbctl asks for JSON; zproxy's
// own error replies); anything else keeps the client's message, the
// status text.
func replyError(err error) error {
	var se *client.StatusError
	if !errors.As(err, &se) {
		return friendly(err)
	}
	var z struct {
		Result string   `json:"result"`
		Reason string   `json:"reason"`
		Errors []string `json:"errors"`
	}
	if json.Unmarshal(se.Body, &z) == nil && z.Result == "error" && z.Reason != "" {
		return &refusal{se: se, reason: z.Reason, errors: z.Errors}
	}
	return err
}

// friendly adds a hint to the failures operators meet most: no socket, no
// permission, and an https:// server that is not trusted or that wants a
// client certificate.
func friendly(err error) error {
	var unknownCA x509.UnknownAuthorityError
	var op *net.OpError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (is lbd running with this control socket?)", err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w (the socket is mode 0600 by default: run as its owner, or set Control's Mode)", err)
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%w (name the server's CA with -C or CAFile, or skip the check with -k)", err)
	case errors.As(err, &op) && op.Op == "remote error" && strings.Contains(op.Err.Error(), "certificate"):
		// The TLS alert of a server that wants a (trusted) client
		// certificate: "certificate required", "bad certificate".
		return fmt.Errorf("%w (the server wants a client certificate it trusts: give it with -K or ClientCert)", err)
	}
	return err
}

// ctlConf returns ~/.poundctl, read once.
func (r *runner) ctlConf() (*ctlConfig, error) {
	if r.cc == nil && r.ccErr == nil {
		r.cc, r.ccErr = loadCtlConfig(r.env)
		if r.cc != nil && r.cc.file != "" {
			r.infof("read configuration %s", r.cc.file)
		}
	}
	return r.cc, r.ccErr
}

// server returns the server of ~/.poundctl that -S selects, or the
// default one.
func (r *runner) server() (*serverDefn, error) {
	cc, err := r.ctlConf()
	if err != nil {
		return nil, err
	}
	return cc.server(r.opt.server)
}

// needPound refuses a command the zproxy dialect has no endpoint for.
func (cn *conn) needPound(what string) error {
	if cn.dialect != dialectPound {
		return fmt.Errorf("%s: not available on the zproxy control socket %s; use the Pound Control socket", what, cn.target)
	}
	return nil
}

// infof prints a -v diagnostic on stderr.
func (r *runner) infof(format string, a ...any) {
	if r.opt.verbose {
		fmt.Fprintf(r.env.Stderr, "%s: info: %s\n", r.prog, fmt.Sprintf(format, a...))
	}
}
