package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/distribution/lifecycle"
	"github.com/slipwayhq/slipway/pkg/uploader"
)

// retentionCmd: slipway retention plan shows what retention deletes now, deleting nothing: from
// the database with this process's SLIPWAY_RETENTION_* defaults, or, with --url, as the server
// sees it.
func retentionCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "plan" {
		return usageError("usage: slipway retention plan [--channel ID] [--url URL --token TOKEN]")
	}
	fs := newFlagSet("retention plan", stderr)
	channel := fs.Int64("channel", 0, "only this channel (its id)")
	serverURL := fs.String("url", "", "ask the server at this URL over its API instead of reading the database")
	token := fs.String("token", "", "with --url: an API token (default $SLIPWAY_TOKEN)")
	if err := parseFlags(fs, args[1:], stdout); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	var plans []uploader.RetentionPlan
	if *serverURL != "" {
		if *token == "" {
			*token = getenv("SLIPWAY_TOKEN")
		}
		if *token == "" {
			return usageError("--url needs a token: --token or SLIPWAY_TOKEN")
		}
		c := &uploader.Client{BaseURL: *serverURL, Token: *token, UserAgent: "slipway-cli/" + buildinfo.Version}
		var err error
		if plans, err = c.RetentionPlans(ctx, *channel); err != nil {
			return err
		}
	} else {
		a, err := openChecked(ctx, getenv, stderr)
		if err != nil {
			return err
		}
		defer a.close()
		var local []lifecycle.RetentionPlan
		if *channel != 0 {
			p, err := a.svc.Retention.PlanChannelRetention(ctx, *channel, nil)
			if err != nil {
				return err
			}
			local = append(local, *p)
		} else if local, err = a.svc.Retention.PlanAllRetention(ctx); err != nil {
			return err
		}
		for _, p := range local {
			up := uploader.RetentionPlan{ChannelID: p.ChannelID}
			for _, v := range p.Victims {
				up.Releases = append(up.Releases, uploader.RetentionVictim{ReleaseID: v.ID, Version: v.Version,
					CreatedAt: v.CreatedAt.UTC().Format(time.RFC3339), Size: v.Size, Reason: v.Reason})
				up.Bytes += v.Size
			}
			plans = append(plans, up)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tRELEASE\tVERSION\tCREATED\tSIZE\tREASON")
	var n int
	var bytes int64
	for _, p := range plans {
		for _, r := range p.Releases {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d\t%s\n", p.ChannelID, r.ReleaseID, r.Version, r.CreatedAt, r.Size, r.Reason)
			n++
		}
		bytes += p.Bytes
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d releases (%d bytes) would be deleted; nothing was deleted.\n", n, bytes)
	return nil
}
