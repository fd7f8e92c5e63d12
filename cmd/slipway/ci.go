package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/uploader"
)

// What the CLI does for CI systems: who a build goes to (--testers, --groups, --notify on upload
// and distribute), and the outputs a GitHub Actions step hands to the next (GITHUB_OUTPUT).

const distributeUsage = `Usage: slipway distribute --release ID [--testers EMAILS] [--groups ALIASES] [--notify=false] --url URL --token TOKEN

Gives a release already uploaded to more testers (POST /api/releases/ID/distribute): testers by
email and tester groups by alias, comma-separated or repeated. Testers new to the app get an
invitation, the others a new-build mail (or the daily digest they chose); --notify=false records
where the release went and mails nobody. Nobody is mailed twice for one release, so running it
again is harmless. stdout has how many testers it reached and how many were mailed (with --json,
the server's answer).

Flags:
`

// testerFlags are the flags that name who a build goes to, shared by upload and distribute.
type testerFlags struct {
	testers, groups []string
	notify          bool
}

func (t *testerFlags) register(fs *flag.FlagSet) {
	fs.Func("testers", "give the build to these testers: emails, comma-separated (repeatable)", func(v string) error {
		t.testers = append(t.testers, splitList(v)...)
		return nil
	})
	fs.Func("groups", "give the build to these tester groups: aliases, comma-separated (repeatable)", func(v string) error {
		t.groups = append(t.groups, splitList(v)...)
		return nil
	})
	fs.BoolVar(&t.notify, "notify", true, "mail the testers the build reaches; --notify=false records it and mails nobody")
}

// boolValueHint is a usage mistake's hint when an argument is "true" or "false": a bool flag
// takes its value after "=" (--notify=false); "--notify false" leaves "false" as an argument.
func boolValueHint(args []string) string {
	for _, a := range args {
		if a == "true" || a == "false" {
			return ` (a bool flag takes its value after "=": --notify=false)`
		}
	}
	return ""
}

// splitList splits a comma-separated flag value, dropping blanks ("a@x.com, b@y.com,").
func splitList(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// distributedText says, for stderr or stdout, how many testers a build reached and were mailed.
func distributedText(d *uploader.Distributed) string {
	return fmt.Sprintf("Sent to %d tester(s), %d notified by mail", d.Testers, d.Notified)
}

// githubOutput is one name=value line for GITHUB_OUTPUT.
type githubOutput struct{ name, value string }

// writeGitHubOutputs appends the outputs to the file GITHUB_OUTPUT names, when it is set (a GitHub
// Actions step; https://docs.github.com/actions/using-workflows/workflow-commands-for-github-actions#setting-an-output-parameter).
// The format is one name=value line each. A value holding a line break could add an output of its
// own choosing (or, in a runner's other files, an environment variable), so such a value is
// refused rather than cut; so is one holding a secret (the token): nothing is written unless every
// line is sound, and all lines go in one write. The values come from the server's answer, never
// from the command line's secrets.
func writeGitHubOutputs(getenv func(string) string, secrets []string, outs []githubOutput) error {
	path := getenv("GITHUB_OUTPUT")
	if path == "" {
		return nil
	}
	var b strings.Builder
	for _, o := range outs {
		if strings.ContainsAny(o.value, "\r\n") {
			return fmt.Errorf("output %s holds a line break; GITHUB_OUTPUT is not written", o.name)
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(o.value, s) {
				return fmt.Errorf("output %s holds the token; GITHUB_OUTPUT is not written", o.name)
			}
		}
		b.WriteString(o.name + "=" + o.value + "\n")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// releaseOutputs are the GITHUB_OUTPUT lines of an uploaded release.
func releaseOutputs(rel *uploader.Release) []githubOutput {
	return []githubOutput{{"release_url", rel.ReleaseURL}, {"install_url", rel.InstallURL}, {"release_id", strconv.FormatInt(rel.ID, 10)}}
}

// distributeCmd: slipway distribute --release ID [--testers ...] [--groups ...] [--notify=false].
func distributeCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("distribute", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), distributeUsage); fs.PrintDefaults() }
	serverURL := fs.String("url", "", "server base URL (default $SLIPWAY_URL)")
	token := fs.String("token", "", "API token allowed to distribute the release's app (default $SLIPWAY_TOKEN)")
	release := fs.Int64("release", 0, "id of the release to distribute (required; the release_id output of slipway upload)")
	asJSON := fs.Bool("json", false, "print the server's JSON answer on stdout")
	var who testerFlags
	who.register(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)) + boolValueHint(fs.Args()))
	}
	if *serverURL == "" {
		*serverURL = getenv("SLIPWAY_URL")
	}
	if *token == "" {
		*token = getenv("SLIPWAY_TOKEN")
	}
	switch {
	case *release <= 0:
		return usageError("--release ID is required (a positive release id)")
	case *serverURL == "":
		return usageError("--url (or SLIPWAY_URL) is required")
	case *token == "":
		return usageError("--token (or SLIPWAY_TOKEN) is required")
	}
	c := &uploader.Client{BaseURL: *serverURL, Token: *token, UserAgent: "slipway-cli/" + buildinfo.Version, OnRetry: retryNotice(stderr)}
	d, err := c.Distribute(ctx, *release, uploader.Distribution{Testers: who.testers, Groups: who.groups, NoNotify: !who.notify})
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		return printJSON(stdout, b)
	}
	_, err = fmt.Fprintf(stdout, "Release %d: %s\n", *release, distributedText(d))
	return err
}

// errOutputs marks a failure to write GITHUB_OUTPUT after a successful upload.
var errOutputs = errors.New("the release is uploaded, but GITHUB_OUTPUT could not be written")
