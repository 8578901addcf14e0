// Package lbctl is lbd's control command: it shows and steers a running lbd
// through its control socket, speaking either of the two dialects lbd
// serves (Pound 4 on the configuration's Control socket, zproxy on the
// socket named by lbd -C). Invoked as "poundctl" it accepts poundctl's
// syntax and prints poundctl's output.
//
// The layout follows containerd's ctr: New builds the urfave/cli
// application (so tests can run it in-process), and each noun lives in its
// own file with the verbs that act on it: list.go (the object listing),
// state.go (enable, disable), session.go, backend.go (add, weight,
// priority, connlimit, remove), log.go, core.go
// (core, version), config.go (reload), upgrade.go, metrics.go, route.go
// (the routing explainer), dashboard.go and cluster.go. conn.go finds the
// socket and the dialect, ctlconf.go reads poundctl's ~/.poundctl, tls.go
// turns it and -k, -C, -K into the TLS settings of an https:// URL, and
// output.go and template.go print replies.
package lbctl

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// Version is lbctl's version; cmd/lbctl sets it from its build-time
// main.Version.
var Version = "0.1.0-dev"

// DefaultConfig is the configuration file searched for a Control
// statement when neither -s, ~/.poundctl, -f nor $LBCTL_SOCKET says where
// the socket is. It is lbd's own default -f.
const DefaultConfig = "/etc/lbd/lbd.cfg"

// Env is what the application reads from and writes to outside its
// arguments; tests substitute all of it.
type Env struct {
	Stdout, Stderr io.Writer
	// Getenv reads an environment variable ($LBCTL_SOCKET, $HOME); nil
	// means none is set.
	Getenv func(string) string
	// LookupEnv tells a variable set to "" from an unset one
	// ($POUNDCTL_CONF); nil means Getenv's value, set when not empty.
	LookupEnv func(string) (string, bool)
	// DefaultConfig overrides DefaultConfig (tests, packagers).
	DefaultConfig string
}

// runner is the state of one invocation: the global options and the
// connection, opened on first use so that `version` works without one.
type runner struct {
	prog string
	env  Env
	opt  globalOptions
	conn *conn
	// cc is ~/.poundctl, read on first use (ccErr if that failed).
	cc    *ctlConfig
	ccErr error
}

// globalOptions are the flags that come before the command.
type globalOptions struct {
	socket, config   string
	json             bool
	indent           int
	tmplFile         string
	tmplName         string
	quiet, verbose   bool
	timeout          time.Duration
	dialect          string
	templateExplicit bool
	server           string // -S
	insecure         bool   // -k
	caFile           string // -C
	clientCert       string // -K
}

// ProgName returns the name lbctl answers to: "poundctl" when invoked
// under that name (a symlink installed for drop-in use), else "lbctl".
func ProgName(argv0 string) string {
	if filepath.Base(argv0) == "poundctl" {
		return "poundctl"
	}
	return "lbctl"
}

// Main runs the command line args (args[0] is the program path, which
// selects poundctl mode) and returns the exit status: 0 on success, 1 on
// any error, which is printed as "lbctl: reason" (or "poundctl: reason").
func Main(args []string, env Env) int {
	if len(args) == 0 {
		args = []string{"lbctl"}
	}
	prog := ProgName(args[0])
	if env.DefaultConfig == "" {
		env.DefaultConfig = DefaultConfig
	}
	if err := New(prog, env).Run(args); err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", prog, err)
		return 1
	}
	return 0
}

// New builds the application for prog ("lbctl" or "poundctl").
func New(prog string, env Env) *cli.App {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.LookupEnv == nil {
		getenv := env.Getenv
		env.LookupEnv = func(k string) (string, bool) {
			v := getenv(k)
			return v, v != ""
		}
	}
	r := &runner{prog: prog, env: env}
	app := &cli.App{
		Name:                   prog,
		HelpName:               prog,
		Usage:                  "show and steer a running lbd through its control socket",
		UsageText:              prog + " [OPTIONS] COMMAND [/L[/S[/B]]] [ARG...]",
		Version:                Version,
		HideVersion:            true,
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		Writer:                 env.Stdout,
		ErrWriter:              env.Stderr,
		Flags:                  r.flags(),
		Before:                 r.before,
		Action:                 r.defaultAction,
		OnUsageError:           usageError,
		// Errors are printed once, by Main; never let cli exit the process.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			r.listCommand(), r.coreCommand(), r.enableCommand(), r.disableCommand(),
			r.addCommand(), r.deleteCommand(), r.logCommand(), r.reloadCommand(),
			r.backendCommand(), r.weightCommand(), r.priorityCommand(), r.sessionCommand(), r.metricsCommand(), r.versionCommand(),
			r.upgradeCommand(), r.routeCommand(), r.dashboardCommand(), r.clusterCommand(), r.acmeCommand(), r.cacheCommand(),
		},
	}
	for _, c := range app.Commands {
		setUsageError(c)
	}
	return app
}

// flags are the global options, poundctl's letters first.
func (r *runner) flags() []cli.Flag {
	o := &r.opt
	return []cli.Flag{
		&cli.StringFlag{Name: "s", Usage: "control `SOCKET` path, or http(s)://HOST[:PORT][/PATH] of a Control service", Destination: &o.socket},
		&cli.StringFlag{Name: "f", Usage: "find the socket in the Control statement of configuration `FILE`", Destination: &o.config},
		&cli.StringFlag{Name: "S", Usage: "use the Server `NAME` section of ~/.poundctl", Destination: &o.server},
		&cli.BoolFlag{Name: "k", Usage: "do not verify the certificate of an https:// server", Destination: &o.insecure},
		&cli.StringFlag{Name: "C", Usage: "verify an https:// server against the CA certificates in `FILE` (or directory)", Destination: &o.caFile},
		&cli.StringFlag{Name: "K", Usage: "present the client certificate and key in PEM `FILE` to an https:// server", Destination: &o.clientCert},
		&cli.BoolFlag{Name: "j", Usage: "print the raw JSON reply", Destination: &o.json},
		&cli.IntFlag{Name: "i", Usage: "indent JSON output by `N` spaces", Destination: &o.indent},
		&cli.StringFlag{Name: "t", Usage: "read Go text/template definitions from `FILE`", Destination: &o.tmplFile},
		&cli.StringFlag{Name: "T", Usage: "print through the template `NAME`", Destination: &o.tmplName},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only identifiers (paths, keys); nothing after a change", Destination: &o.quiet},
		&cli.DurationFlag{Name: "timeout", Usage: "give up on the server after `DURATION`", Value: 10 * time.Second, Destination: &o.timeout},
		&cli.StringFlag{Name: "dialect", Usage: "control API `DIALECT`: auto, pound or zproxy", Value: "auto", Destination: &o.dialect},
		&cli.BoolFlag{Name: "v", Usage: "verbose: say which socket and dialect are used", Destination: &o.verbose},
		&cli.BoolFlag{Name: "V", Usage: "print the version and exit"},
	}
}

// before validates the global options once they are parsed.
func (r *runner) before(c *cli.Context) error {
	switch r.opt.dialect {
	case "auto", dialectPound, dialectZproxy:
	default:
		return fmt.Errorf("unknown dialect %q (want auto, pound or zproxy)", r.opt.dialect)
	}
	if r.opt.indent < 0 || r.opt.indent > 80 {
		return fmt.Errorf("indent %d out of range [0..80]", r.opt.indent)
	}
	if r.opt.timeout < 0 {
		return errors.New("timeout must not be negative")
	}
	r.opt.templateExplicit = r.opt.tmplFile != "" || r.opt.tmplName != ""
	return nil
}

// defaultAction runs when no command is named: -V, or poundctl's default
// command, list.
func (r *runner) defaultAction(c *cli.Context) error {
	if c.Bool("V") {
		fmt.Fprintf(r.env.Stdout, "%s (lbd) %s\n", r.prog, Version)
		return nil
	}
	if c.NArg() > 0 {
		return fmt.Errorf("unknown command %q; try %s -h", c.Args().First(), r.prog)
	}
	return r.list("")
}

// usageError reports a flag error once, without cli's help dump.
func usageError(_ *cli.Context, err error, _ bool) error { return err }

// setUsageError installs usageError on a command tree.
func setUsageError(c *cli.Command) {
	c.OnUsageError = usageError
	for _, s := range c.Subcommands {
		setUsageError(s)
	}
}

// CommandNames lists every command of the application as it is typed,
// aliases included and subcommands as "noun verb", for the check that
// lbctl(8) documents them all.
func CommandNames(app *cli.App) []string {
	var out []string
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			for _, n := range c.Names() {
				out = append(out, strings.TrimSpace(prefix+" "+n))
			}
			walk(strings.TrimSpace(prefix+" "+c.Name), c.Subcommands)
		}
	}
	walk("", app.Commands)
	return out
}

// connectNoArgs is connect for a command that takes no arguments.
func (r *runner) connectNoArgs(c *cli.Context) (*conn, error) {
	if _, err := args(c, 0, 0); err != nil {
		return nil, err
	}
	return r.connect()
}

// args checks the number of positional arguments, with poundctl's
// messages.
func args(c *cli.Context, min, max int) ([]string, error) {
	a := c.Args().Slice()
	switch {
	case len(a) < min:
		return nil, errors.New("required argument missing")
	case len(a) > max:
		return nil, errors.New("too many arguments")
	}
	return a, nil
}
