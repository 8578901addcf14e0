package lbctl

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// dashboardCommand serves the dashboard of the control socket on a local
// TCP port, for a browser: a reverse proxy to the socket's /dashboard/.
func (r *runner) dashboardCommand() *cli.Command {
	return &cli.Command{
		Name:  "dashboard",
		Usage: "serve the live dashboard of the control socket on a local TCP port, until interrupted",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "l", Value: "127.0.0.1:0", Usage: "listen on `ADDRESS` (host:port; port 0 picks a free one)"},
		},
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return r.dashboard(ctx, c.String("l"))
		},
	}
}

// cookieName is the cookie that proves a browser opened the URL lbctl
// printed.
const cookieName = "lbctl_dashboard"

// dashboard serves until ctx ends.
func (r *runner) dashboard(ctx context.Context, addr string) error {
	cn, err := r.connect()
	if err != nil {
		return err
	}
	proxy, err := r.dashboardProxy(cn.target)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	var b [16]byte
	// crypto/rand.Read does not fail (it panics instead, Go 1.24+).
	_, _ = rand.Read(b[:])
	key := hex.EncodeToString(b[:])
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		fmt.Fprintf(r.env.Stderr, "%s: warning: %s is not a loopback address: anyone who can reach it and has the URL below can disable backends\n", r.prog, ln.Addr())
	}
	fmt.Fprintf(r.env.Stdout, "%s: dashboard of %s at http://%s/?key=%s\n", r.prog, cn.target, ln.Addr(), key)
	srv := &http.Server{Handler: &dashGate{key: key, next: proxy}, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// dashboardProxy forwards to the dashboard of target, a socket path or
// the http(s):// URL of a Control service.
func (r *runner) dashboardProxy(target string) (http.Handler, error) {
	base := &url.URL{Scheme: "http", Host: "localhost"}
	tr := &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: r.opt.timeout}
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		u, err := url.Parse(target)
		if err != nil {
			return nil, fmt.Errorf("dashboard: %w", err)
		}
		base = u
		srv, err := r.server()
		if err != nil {
			return nil, err
		}
		if tr.TLSClientConfig, err = r.tlsConfig(srv, target); err != nil {
			return nil, err
		}
	} else {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", target)
		}
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(base)
			// The gate checked where the request comes from; lbd sees a
			// same-origin request for its own host and checks the token.
			pr.Out.Header.Del("Origin")
			pr.Out.Header.Del("Sec-Fetch-Site")
			pr.Out.Header.Del("Cookie")
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "lbctl: the control socket does not answer: "+err.Error(), http.StatusBadGateway)
		},
	}, nil
}

// dashGate lets through only the dashboard's paths, for a browser that
// opened the printed URL (it got the cookie), from the page itself.
type dashGate struct {
	key  string
	next http.Handler
}

func (g *dashGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if k := r.URL.Query().Get("key"); k != "" && r.URL.Path == "/" {
		if subtle.ConstantTimeCompare([]byte(k), []byte(g.key)) != 1 {
			http.Error(w, "lbctl: wrong key", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: g.key, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/dashboard/", http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(cookieName)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(g.key)) != 1 {
		http.Error(w, "lbctl: open the URL lbctl dashboard printed (it carries the access key)", http.StatusForbidden)
		return
	}
	switch {
	case crossSite(r):
		http.Error(w, "lbctl: cross-site request refused", http.StatusForbidden)
	case r.URL.Path == "/":
		http.Redirect(w, r, "/dashboard/", http.StatusSeeOther)
	case r.URL.Path == "/dashboard" || strings.HasPrefix(r.URL.Path, "/dashboard/"):
		g.next.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// crossSite is lbd's rule (adminapi): a browser that says the request
// comes from another site, or an Origin other than the host asked for.
func crossSite(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return true
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err != nil || !strings.EqualFold(u.Host, r.Host)
	}
	return false
}
