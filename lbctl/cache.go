package lbctl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"lbd/adminapi"
)

// cacheCommand shows the shared caches' counters (GET /cache) and
// purges URLs from them (POST /cache/purge), on either socket.
func (r *runner) cacheCommand() *cli.Command {
	return &cli.Command{
		Name:  "cache",
		Usage: "show the counters of the services' shared caches",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "j", Usage: "print the JSON reply", Destination: &r.opt.json}},
		Action: func(c *cli.Context) error {
			if _, err := args(c, 0, 0); err != nil {
				return err
			}
			return r.cacheStats()
		},
		Subcommands: []*cli.Command{{
			Name:      "purge",
			Usage:     "remove a URL from every service's cache (with -p: every URL under it)",
			ArgsUsage: "URL",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "p", Usage: "purge every URL that starts with URL"},
				&cli.BoolFlag{Name: "j", Usage: "print the JSON reply", Destination: &r.opt.json},
			},
			Action: func(c *cli.Context) error {
				a, err := args(c, 1, 1)
				if err != nil {
					return err
				}
				return r.cachePurge(adminapi.PurgeQuery{URL: a[0], Prefix: c.Bool("p")})
			},
		}},
	}
}

func (r *runner) cacheStats() error {
	cn, err := r.connect()
	if err != nil {
		return err
	}
	reply, err := cn.do(http.MethodGet, "/cache", nil)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if r.opt.json {
		return r.printJSON(reply)
	}
	var stats []adminapi.CacheStat
	if err := json.Unmarshal(reply, &stats); err != nil {
		return fmt.Errorf("unexpected reply: %w", err)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tNAME\tBYTES\tBUDGET\tOBJECTS\tHITS\tMISSES\tSTALE\tREVALIDATED\tPASSES\tEVICTED\tPURGED")
	for _, s := range stats {
		where := fmt.Sprintf("/%d/%d", s.Listener, s.Service)
		if s.Listener < 0 {
			where = fmt.Sprintf("/-/%d", s.Service)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", where, s.Name, s.Bytes, s.Budget, s.Objects,
			s.Hits, s.Misses, s.Stale, s.Revalidations, s.Passes, s.Evictions, s.Purged)
	}
	return tw.Flush()
}

func (r *runner) cachePurge(q adminapi.PurgeQuery) error {
	cn, err := r.connect()
	if err != nil {
		return err
	}
	reply, err := cn.do(http.MethodPost, "/cache/purge", q)
	if err != nil {
		return fmt.Errorf("cache purge: %w", err)
	}
	if r.opt.json {
		return r.printJSON(reply)
	}
	var p adminapi.PurgeReply
	if err := json.Unmarshal(reply, &p); err != nil {
		return fmt.Errorf("unexpected reply: %w", err)
	}
	_, err = fmt.Fprintf(r.env.Stdout, "purged %d\n", p.Purged)
	return err
}
