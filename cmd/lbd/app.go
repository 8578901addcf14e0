package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"lbd/lua"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

// poundVersion is the Pound release whose behaviour and control API lbd
// follows. Run as pound, lbd reports it as its version in the control API,
// as a drop-in replacement must for the tools that check it there; -V
// still names lbd and its own version.
const poundVersion = "4.23.90"

// apiVersion is the version the control API reports.
func apiVersion(prog string) string {
	if prog == "pound" {
		return poundVersion
	}
	return Version
}

// progName is how lbd names itself in messages: "pound" when invoked as
// pound (drop-in mode), "lbd" otherwise.
func progName(argv0 string) string {
	base := filepath.Base(argv0)
	if base == "pound" {
		return "pound"
	}
	return "lbd"
}

// defaultConfig is the configuration file read without -f: Pound's when
// lbd runs as pound, so an init script written for Pound works unchanged.
func defaultConfig(prog string) string {
	if prog == "pound" {
		return "/etc/pound.cfg"
	}
	return "/etc/lbd/lbd.cfg"
}

// options are the parsed command line.
type options struct {
	prog       string
	configFile string
	pidFile    string
	check      bool
	verbose    bool
	stderr     bool
	foreground bool
	dump       bool
	control    string // zproxy -C control socket
	// messageFormat is --message-format: text or json; "" follows the
	// configuration's MessageFormat.
	messageFormat string
	features      []string
}

// newApp builds the CLI. Pound's getopt flags are single letters; the
// glued form -WFEATURE is split before urfave/cli sees it.
//
// lbd is built with the tag urfave_cli_no_template (Makefile): urfave/cli
// then writes its help without text/template, whose reflective method
// calls would make the linker keep every exported method of every type
// the program puts in an interface (bench/RESULTS.md §42).
func newApp(prog string, stdout, stderr io.Writer, run func(*options) int) *cli.Command {
	o := &options{prog: prog}
	return &cli.Command{
		Name:                   prog,
		Usage:                  "HTTP load balancer, a drop-in replacement for Pound and zproxy",
		Version:                Version,
		Writer:                 stdout,
		ErrWriter:              stderr,
		UseShortOptionHandling: true,
		HideHelpCommand:        true,
		HideVersion:            true,
		// One feature per -W, the whole argument, as Pound takes it.
		DisableSliceFlagSeparator: true,
		// A bad flag is one line on stderr (main's), as getopt's is.
		OnUsageError: func(_ context.Context, _ *cli.Command, err error, _ bool) error { return err },
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "f", Usage: "configuration `FILE`", Value: defaultConfig(prog), Destination: &o.configFile},
			&cli.StringFlag{Name: "p", Usage: "PID `FILE` (overrides PIDFile)", Destination: &o.pidFile},
			&cli.BoolFlag{Name: "c", Usage: "check the configuration and exit", Destination: &o.check},
			&cli.BoolFlag{Name: "v", Usage: "verbose: print startup diagnostics", Destination: &o.verbose},
			&cli.BoolFlag{Name: "V", Usage: "print the version and exit"},
			&cli.BoolFlag{Name: "e", Usage: "log to stderr and stay in the foreground", Destination: &o.stderr},
			&cli.BoolFlag{Name: "F", Usage: "stay in the foreground", Destination: &o.foreground},
			&cli.StringSliceFlag{Name: "W", Usage: "`FEATURE`: [no-]dns, [no-]include-dir, include-dir=DIR, [no-]warn-deprecated"},
			&cli.StringFlag{Name: "C", Usage: "zproxy control `SOCKET`", Destination: &o.control},
			&cli.StringFlag{Name: "message-format", Usage: "`STYLE` of lbd's own messages: text or json (overrides MessageFormat)", Destination: &o.messageFormat},
			&cli.BoolFlag{Name: "dump-config", Usage: "print the normalised configuration as JSON and exit", Destination: &o.dump},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Bool("V") {
				fmt.Fprintf(stdout, "%s (lbd) %s\n\n%s", prog, Version, features())
				return nil
			}
			if cmd.NArg() > 0 {
				return cli.Exit(fmt.Sprintf("%s: unexpected argument %q", prog, cmd.Args().First()), 1)
			}
			o.features = cmd.StringSlice("W")
			if code := run(o); code != 0 {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}

// features lists what this build has, as Pound's -V does.
func features() string {
	l := "Lua support:                disabled (built without liblua5.4-dev)\n"
	if lua.Available {
		l = "Lua support:                enabled (" + lua.Version + ")\n"
	}
	return "Built-in defaults:\n\n" +
		"Regex types:                POSIX (RE2), PCRE (regexp2)\n" +
		"Dynamic backends:           enabled\n" +
		"FS event monitoring:        inotify\n" + l
}

// splitGlued turns Pound's glued -WFEATURE into -W FEATURE and leaves
// everything else alone.
func splitGlued(args []string) []string {
	out := make([]string, 0, len(args)+2)
	for _, a := range args {
		if len(a) > 2 && strings.HasPrefix(a, "-W") && a[2] != '=' {
			out = append(out, "-W", a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// init installs the signal handlers at the earliest point a Go program
// can: before main, before flags are read or anything is loaded.
func init() { catchSignals() }

func main() {
	prog := progName(os.Args[0])
	app := newApp(prog, os.Stdout, os.Stderr, run)
	if err := app.Run(context.Background(), splitGlued(os.Args)); err != nil {
		if ec, ok := err.(cli.ExitCoder); ok {
			if msg := ec.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, msg)
			}
			os.Exit(ec.ExitCode())
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		os.Exit(1)
	}
}
