// Command slipway is Slipway's one binary: the server (serve), schema migrations (migrate), API
// tokens (token), the storage collector (gc) and the CLI uploader (upload, debug-file upload).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `Usage: slipway <command> [arguments]

Commands:
  serve                               run migrations (SLIPWAY_MIGRATE_ON_START), then serve HTTP until SIGTERM/SIGINT
  migrate up|version                  apply the pending migrations; print the schema's version (exit 1 when dirty)
  migrate down [N] [--yes]            revert the N newest migrations (default 1); without --yes, only list them
  migrate force VERSION               record VERSION and clear the dirty flag, running nothing (after an interrupted migration)
  token create --name NAME [--scope upload|admin] [--expires 90d|DATE] [--app APP]... [--ability upload,read,devices]
                                      create an API token (printed once, on the last line), limited to
                                      apps (by id or name) and abilities when given
  token list                          list tokens (never their secrets)
  token revoke NAME                   revoke the active token named NAME
  gc [--grace DURATION]               delete orphaned objects once
  gc --reconcile [--dry-run] [--min-age DURATION]
                                      list the bucket; delete the objects no row names (after a restore), report missing ones
  insights backfill [--concurrency N] record the insights (size breakdown, permissions...) of every release
                                      uploaded before they were kept; resumable, prints progress
  admin login-link [--email ADDRESS]  print a one-time link that signs in to the console as the administrator
                                      (or as the user of that email)
  retention plan [--channel ID] [--url URL --token TOKEN]
                                      show what retention policies delete now (deletes nothing)
  upload FILE --url URL --token TOKEN [--channel-key KEY] [--changelog TEXT] [--custom-field N=V] ...
                                      upload an app package; prints the release URL (see upload -h);
                                      --testers EMAILS --groups ALIASES [--notify=false] give it to testers
  distribute --release ID [--testers EMAILS] [--groups ALIASES] [--notify=false] --url URL --token TOKEN
                                      give a release already uploaded to more testers
  debug-file upload FILE --url URL --token TOKEN --channel-key KEY
                                      upload a zipped dSYM or ProGuard mapping (see debug-file upload -h)
  repo-key generate [--name NAME] [--email ADDRESS]
                                      print a new OpenPGP private key (Ed25519) for SLIPWAY_REPO_KEY_FILE,
                                      which signs the channels' APT and DNF repositories
  mail test --to ADDRESS              send one message through the configured SMTP relay now (not the outbox)
  mail status                         count the mail outbox: pending and failed mails
  version                             print the version

Configuration comes from SLIPWAY_* environment variables; see the README. The upload and
distribute commands read SLIPWAY_URL and SLIPWAY_TOKEN when --url and --token are not given.
Only the migrate command and serve change the schema; only they create a missing database, and
only with SLIPWAY_CREATE_DATABASE=true.
`

// run executes one command and returns the process exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if wantsHelp(args[1:]) && !parsesOwnFlags(args) {
		fmt.Fprint(stdout, commandUsage(args[0]))
		return 0
	}
	if args[0] != "serve" {
		// What a command changes is recorded as the CLI's (audit rows, tombstones); retention
		// and the collector name themselves.
		ctx = distribution.WithActor(ctx, distribution.SystemActor("cli"))
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, getenv, stderr)
	case "migrate":
		err = migrateCmd(ctx, args[1:], getenv, stdout, stderr)
	case "token":
		err = tokenCmd(ctx, args[1:], getenv, stdout, stderr)
	case "gc":
		err = gcCmd(ctx, args[1:], getenv, stdout, stderr)
	case "insights":
		err = insightsCmd(ctx, args[1:], getenv, stdout, stderr)
	case "admin":
		err = adminCmd(ctx, args[1:], getenv, stdout, stderr)
	case "retention":
		err = retentionCmd(ctx, args[1:], getenv, stdout, stderr)
	case "upload":
		err = uploadCmd(ctx, args[1:], getenv, stdout, stderr)
	case "debug-file":
		err = debugFileCmd(ctx, args[1:], getenv, stdout, stderr)
	case "distribute":
		err = distributeCmd(ctx, args[1:], getenv, stdout, stderr)
	case "repo-key":
		err = repoKeyCmd(args[1:], stdout, stderr)
	case "mail":
		err = mailCmd(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version", "-v":
		printVersion(stdout)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "slipway: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		if e, ok := err.(usageError); ok {
			fmt.Fprintf(stderr, "slipway %s: %s\n", args[0], string(e))
			return 2
		}
		fmt.Fprintf(stderr, "slipway %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// errHelp is returned by a command that printed its usage because -h or --help asked for it.
var errHelp = errors.New("help shown")

// wantsHelp reports whether args ask for help (-h, -help, --help before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// parsesOwnFlags reports whether the command line names a command with flags of its own, which
// prints its usage with those flags (parseFlags).
func parsesOwnFlags(args []string) bool {
	sub := ""
	if len(args) > 1 {
		sub = args[1]
	}
	switch args[0] {
	case "gc", "upload", "distribute":
		return true
	case "migrate":
		return sub == "down"
	case "token":
		return sub == "create" || sub == "list" || sub == "revoke"
	case "retention":
		return sub == "plan"
	case "insights":
		return sub == "backfill"
	case "debug-file":
		return sub == "upload"
	case "mail":
		return sub == "test"
	case "repo-key":
		return sub == "generate"
	}
	return false
}

// commandUsage is the part of the usage that describes one command (all of it for an unknown
// command or "help").
func commandUsage(name string) string {
	head, rest, _ := strings.Cut(usage, "Commands:\n")
	table, tail, _ := strings.Cut(rest, "\n\n")
	var b strings.Builder
	in := false
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "   ") { // a command's first line (continuations are indented deeper)
			in = strings.HasPrefix(strings.TrimSpace(line)+" ", name+" ")
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return usage
	}
	_ = head
	return "Usage:\n" + b.String() + "\n" + tail
}

// newFlagSet is the flag set of the command "slipway name": errors go to stderr, and its usage
// names the command.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: slipway %s [flags]\n\nFlags:\n", name)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses a command's flags. With -h, -help or --help it prints the command's usage
// and flags on stdout instead and returns errHelp (exit 0); a mistake is a usageError (exit 2).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if wantsHelp(args) {
		return showUsage(fs, stdout)
	}
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	return nil
}

// showUsage prints fs's usage on stdout and returns errHelp.
func showUsage(fs *flag.FlagSet, stdout io.Writer) error {
	out := fs.Output()
	fs.SetOutput(stdout)
	fs.Usage()
	fs.SetOutput(out)
	return errHelp
}

// usageError is a mistake in the command line, reported with exit code 2.
type usageError string

func (e usageError) Error() string { return string(e) }
