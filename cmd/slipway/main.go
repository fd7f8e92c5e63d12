// Command slipway is Slipway's one binary: the server (serve), schema migrations (migrate), API
// tokens (token), the storage collector (gc) and the CLI uploader (upload, debug-file upload).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `Usage: slipway <command> [arguments]

Commands:
  serve                               run migrations, then serve HTTP until SIGTERM/SIGINT
  migrate up|down|version             manage the database schema
  token create --name NAME [--scope upload|admin]
                                      create an API token (printed once, on the last line)
  token list                          list tokens (never their secrets)
  token revoke NAME                   revoke the active token named NAME
  gc [--grace DURATION]               delete orphaned objects once
  admin login-link                    print a one-time link that signs in to the console as the administrator
  retention plan [--channel ID] [--url URL --token TOKEN]
                                      show what retention policies delete now (deletes nothing)
  upload FILE --url URL --token TOKEN [--channel-key KEY] [--changelog TEXT] [--custom-field N=V] ...
                                      upload an app package; prints the release URL (see upload -h)
  debug-file upload FILE --url URL --token TOKEN --channel-key KEY
                                      upload a zipped dSYM or ProGuard mapping (see debug-file upload -h)
  version                             print the version

Configuration comes from SLIPWAY_* environment variables; see the README. The upload commands
read SLIPWAY_URL and SLIPWAY_TOKEN when --url and --token are not given.
`

// run executes one command and returns the process exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
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
	case "admin":
		err = adminCmd(ctx, args[1:], getenv, stdout, stderr)
	case "retention":
		err = retentionCmd(ctx, args[1:], getenv, stdout, stderr)
	case "upload":
		err = uploadCmd(ctx, args[1:], getenv, stdout, stderr)
	case "debug-file":
		err = debugFileCmd(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version", "-v":
		printVersion(stdout)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "slipway: unknown command %q\n\n%s", args[0], usage)
		return 2
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

// usageError is a mistake in the command line, reported with exit code 2.
type usageError string

func (e usageError) Error() string { return string(e) }
