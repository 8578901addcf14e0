package lbctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"lbd/adminapi/client"
)

// acmeView is GET /acme (lbd's automatic certificates, both dialects).
type acmeView struct {
	Directory    string         `json:"directory"`
	Certificates []acmeCertView `json:"certificates"`
}

type acmeCertView struct {
	Name        string  `json:"name"`
	Issuer      *string `json:"issuer"`
	Serial      *string `json:"serial"`
	NotAfter    *string `json:"not_after"`
	NextRenewal *string `json:"next_renewal"`
	Stapled     bool    `json:"ocsp_stapled"`
	Ordering    bool    `json:"ordering"`
	LastError   *string `json:"last_error"`
	LastErrorAt *string `json:"last_error_at"`
	Obtained    uint64  `json:"obtained"`
	Failures    uint64  `json:"failures"`
}

// errNoACME is a server without an ACMEAccount section.
var errNoACME = errors.New("this lbd has no automatic certificates (no ACMEAccount section)")

// acmeCommand lists the automatic certificates; "acme renew NAME" forces
// a renewal.
func (r *runner) acmeCommand() *cli.Command {
	return &cli.Command{
		Name:  "acme",
		Usage: "list the automatic (ACME) certificates: names, issuer, expiry, next renewal, last error",
		Action: func(c *cli.Context) error {
			cn, err := r.connectNoArgs(c)
			if err != nil {
				return err
			}
			_, reply, err := cn.c.Do(http.MethodGet, "/acme", nil)
			if err != nil {
				return acmeError(err)
			}
			if r.opt.json {
				return r.printJSON(reply)
			}
			var v acmeView
			if err := json.Unmarshal(reply, &v); err != nil {
				return fmt.Errorf("unexpected reply to GET /acme: %w", err)
			}
			return writeACME(r.env.Stdout, &v, time.Now())
		},
		Subcommands: []*cli.Command{{
			Name:      "renew",
			Usage:     "renew the certificate of NAME now (the new one is served as soon as it is issued)",
			ArgsUsage: "NAME",
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return fmt.Errorf("acme renew takes one host name")
				}
				cn, err := r.connect()
				if err != nil {
					return err
				}
				_, reply, err := cn.c.Do(http.MethodPost, "/acme/renew", map[string]string{"name": c.Args().First()})
				if err != nil {
					return acmeError(err)
				}
				if r.opt.json {
					return r.printJSON(reply)
				}
				var v struct {
					Certificate acmeCertView `json:"certificate"`
				}
				if err := json.Unmarshal(reply, &v); err != nil {
					return fmt.Errorf("unexpected reply to POST /acme/renew: %w", err)
				}
				fmt.Fprintf(r.env.Stdout, "%s: renewed, serial %s, valid until %s\n", v.Certificate.Name, optText(v.Certificate.Serial), optText(v.Certificate.NotAfter))
				return nil
			},
		}},
	}
}

// acmeError turns a refusal into its reason; a server without automatic
// certificates says so.
func acmeError(err error) error {
	var se *client.StatusError
	if errors.As(err, &se) && se.Status == http.StatusBadRequest && len(se.Body) == 0 {
		return errNoACME
	}
	return replyError(err)
}

// writeACME prints one line per automatic name.
func writeACME(w io.Writer, v *acmeView, now time.Time) error {
	fmt.Fprintf(w, "ACME directory %s, %d names\n", v.Directory, len(v.Certificates))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tISSUER\tSERIAL\tNOT AFTER\tNEXT RENEWAL\tSTATE\tLAST ERROR")
	for _, c := range v.Certificates {
		state := "valid"
		switch {
		case c.Ordering:
			state = "ordering"
		case c.Serial == nil:
			state = "none yet"
		}
		if c.Stapled {
			state += ", OCSP stapled"
		}
		lastErr := "-"
		if c.LastError != nil {
			lastErr = *c.LastError
			if c.LastErrorAt != nil {
				lastErr = ago(c.LastErrorAt, now) + ": " + lastErr
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, optText(c.Issuer), optText(c.Serial),
			optText(c.NotAfter), optText(c.NextRenewal), state, lastErr)
	}
	return tw.Flush()
}

func optText(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
