package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/insights"
	"github.com/slipwayhq/slipway/pkg/uploader"
)

// maxChangelogFile bounds --changelog-file: the server takes at most 1 MiB per form field.
const maxChangelogFile = 1 << 20

const uploadUsage = `Usage: slipway upload FILE --url URL --token TOKEN [flags]

Uploads an app package (.ipa, .apk, .aab, .hap, zipped .app, .pkg, .dmg, .exe, .msi, .msix, .deb,
.rpm, .AppImage, .nupkg) to a Slipway or Zealot server, streaming it from disk. On success the
release page URL is the last line on stdout (with --json, the server's whole answer instead). On
failure the exit status is 1 and stderr has the server's message. With --report markdown, stdout
has instead a Markdown report of what changed since the channel's previous build (size, components,
permissions, entitlements, minimum OS, architectures, signing; the size budgets crossed) ending with
the release page's link, ready to post as a pull-request comment.

Files of 64 MiB or more go through a resumable upload session (--session): their parts go straight
to the server's object storage, three at a time, and if the upload is cut (a network failure, a
killed job), running the same command again resumes it; the session is remembered in
FILE.slipway-upload. A busy server (429, 503) is retried with backoff, every attempt with the same
Idempotency-Key, so a retry never makes two releases. Servers without sessions get one request.
The token is never printed; prefer SLIPWAY_TOKEN to --token, which other users may see in ps.

Custom fields: --custom-field NAME=VALUE (split at the first "=", so the value may hold "="), or a
JSON object for an icon: --custom-field '{"name":"QA","value":"passed","icon":"fa fa-check"}'.
Repeat the flag for more fields.

Desktop update feeds (docs/feeds.md): --ed-signature "$(sign_update -p MyApp.zip)" gives Sparkle's
signature (without it, a server with a Sparkle key signs the build itself), --tauri-signature-file
MyApp.app.tar.gz.sig the Tauri updater's; --rollout 25 offers the build to a quarter of installs,
--critical marks it a critical update. Both can be changed later in the console.

Testers: --testers a@x.com,b@y.com and --groups qa,beta give the build to those testers beyond its
channel's tester groups; they are mailed unless --notify=false (recorded, nobody mailed). stderr
says how many the build reached and how many were mailed. slipway distribute does the same for a
build already uploaded.

In GitHub Actions (GITHUB_OUTPUT set), the release's release_url, install_url and release_id are
appended to GITHUB_OUTPUT as step outputs (docs/ci.md); never the token.

Flags:
`

const debugFileUsage = `Usage: slipway debug-file upload FILE --url URL --token TOKEN --channel-key KEY [flags]

Uploads a zipped dSYM (iOS, macOS) or an Android archive (mapping.txt, R.txt, AndroidManifest.xml).
On success stdout has the debug file's id, then its download URL (file_url) on the last line; with
--json, the server's whole answer instead. For Android give --release-version and --build-version
unless the archive holds an AndroidManifest.xml; for Apple the dSYM's own versions are used.

Flags:
`

// uploadFlags are the flags both upload commands share.
type uploadFlags struct {
	url, token, progress string
	json                 bool
	session              string
}

func (u *uploadFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&u.url, "url", "", "server base URL, e.g. https://slipway.example.com (default $SLIPWAY_URL)")
	fs.StringVar(&u.token, "token", "", "API token with upload scope (default $SLIPWAY_TOKEN)")
	fs.StringVar(&u.progress, "progress", "auto", "progress on stderr: auto (a bar on a terminal, else lines), bar, lines or none")
	fs.BoolVar(&u.json, "json", false, "print the server's JSON answer on stdout instead of the URL")
	fs.StringVar(&u.session, "session", "auto", "resumable upload session (parts straight to storage, resumed after a failure): auto (files of 64 MiB or more), always or never")
}

// useSession reports whether the upload of path goes through an upload session.
func (u *uploadFlags) useSession(path string) (bool, error) {
	switch u.session {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		st, err := os.Stat(path)
		return err == nil && st.Size() >= uploader.DefaultSessionThreshold, nil
	}
	return false, usageError("--session must be auto, always or never")
}

// client validates the shared flags, filling them from the environment, and builds the client.
func (u *uploadFlags) client(getenv func(string) string) (*uploader.Client, error) {
	if u.url == "" {
		u.url = getenv("SLIPWAY_URL")
	}
	if u.token == "" {
		u.token = getenv("SLIPWAY_TOKEN")
	}
	switch {
	case u.url == "":
		return nil, usageError("--url (or SLIPWAY_URL) is required")
	case u.token == "":
		return nil, usageError("--token (or SLIPWAY_TOKEN) is required")
	}
	switch u.progress {
	case "auto", "bar", "lines", "none":
	default:
		return nil, usageError("--progress must be auto, bar, lines or none")
	}
	return &uploader.Client{BaseURL: u.url, Token: u.token, UserAgent: "slipway-cli/" + buildinfo.Version}, nil
}

// retryNotice tells, on stderr, that an upload is sent again and why.
func retryNotice(stderr io.Writer) func(attempt int, wait time.Duration, cause error) {
	return func(attempt int, wait time.Duration, cause error) {
		fmt.Fprintf(stderr, "%v; sending again in %s (attempt %d of %d)\n", cause, wait.Round(time.Second), attempt, uploader.DefaultMaxAttempts)
	}
}

// reporter returns the progress reporter for the --progress mode, or nil for none.
func (u *uploadFlags) reporter(stderr io.Writer, getenv func(string) string, path string) *uploader.Reporter {
	style := uploader.Lines
	width := 0
	switch u.progress {
	case "none":
		return nil
	case "bar":
		style = uploader.Bar
	case "auto":
		if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && getenv("TERM") != "dumb" {
			style = uploader.Bar
			width, _, _ = term.GetSize(int(f.Fd()))
		}
	}
	r := uploader.NewReporter(stderr, style, filepath.Base(path))
	if width > 0 {
		r.Width = width
	}
	return r
}

// send runs one upload of path (do) against the server the flags name, showing progress as they ask.
func (u *uploadFlags) send(getenv func(string) string, stderr io.Writer, path string, do func(*uploader.Client, uploader.ProgressFunc) error) error {
	c, err := u.client(getenv)
	if err != nil {
		return err
	}
	c.OnRetry = retryNotice(stderr)
	if err := announce(stderr, u.progress, path, c.BaseURL); err != nil {
		return err
	}
	r := u.reporter(stderr, getenv, path)
	err = do(c, start(r))
	stop(r)
	return err
}

// uploadCmd: slipway upload FILE [flags].
func uploadCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("upload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), uploadUsage); fs.PrintDefaults() }
	var common uploadFlags
	common.register(fs)
	var form uploader.AppForm
	fs.StringVar(&form.ChannelKey, "channel-key", "", "channel to upload to; without it the app, scheme and channel are found or created")
	fs.StringVar(&form.Name, "name", "", "app name (default: the name in the package)")
	fs.StringVar(&form.ReleaseType, "release-type", "", "debug, beta, adhoc, release, enterprise, ... (default: from the package)")
	fs.StringVar(&form.Changelog, "changelog", "", "changelog: plain text, one entry per line, or Zealot's JSON array")
	changelogFile := fs.String("changelog-file", "", "read the changelog from this file")
	fs.Func("custom-field", "NAME=VALUE, or a JSON object with name, value and icon (repeatable)", func(v string) error {
		f, err := parseCustomField(v)
		if err == nil {
			form.CustomFields = append(form.CustomFields, f)
		}
		return err
	})
	fs.StringVar(&form.Branch, "branch", "", "git branch")
	fs.StringVar(&form.GitCommit, "git-commit", "", "git commit hash")
	fs.StringVar(&form.CIURL, "ci-url", "", "URL of the CI build")
	fs.StringVar(&form.Password, "password", "", "set the channel's download password")
	fs.StringVar(&form.Source, "source", "slipway-cli", "origin of the upload, shown with the release")
	fs.StringVar(&form.ReleaseVersion, "release-version", "", "release version, for packages without readable metadata (.dmg)")
	fs.StringVar(&form.BuildVersion, "build-version", "", "build version, for packages without readable metadata (.dmg)")
	fs.StringVar(&form.BundleID, "bundle-id", "", "bundle id, for packages without readable metadata (.dmg)")
	fs.StringVar(&form.EdSignature, "ed-signature", "", "Sparkle EdDSA signature of the file, as sign_update prints it (macOS; docs/feeds.md)")
	fs.StringVar(&form.TauriSignature, "tauri-signature", "", "content of the Tauri signer's .sig file for the file")
	tauriSigFile := fs.String("tauri-signature-file", "", "read the Tauri signature from this .sig file")
	fs.StringVar(&form.Rollout, "rollout", "", "staged rollout: the percentage of installs the update feeds offer it to, 0-100 (default 100)")
	fs.BoolVar(&form.Critical, "critical", false, "mark the build a critical (mandatory) update in the update feeds")
	fs.StringVar(&form.AllowOtherBundleID, "allow-other-bundle-id", "", "a build of another app than the channel holds: false refuses it (nothing kept), true keeps it meaning it; by default it is kept with a warning")
	report := fs.String("report", "", "after the upload, print a report of what changed on stdout instead of the URL: markdown")
	var who testerFlags
	who.register(fs)
	if wantsHelp(args) {
		return showUsage(fs, stdout)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("want exactly one FILE to upload (see slipway upload -h)" + boolValueHint(pos))
	}
	switch {
	case *report != "" && *report != "markdown":
		return usageError("--report must be markdown")
	case *report != "" && common.json:
		return usageError("give --json or --report, not both")
	}
	if *changelogFile != "" {
		if form.Changelog != "" {
			return usageError("give --changelog or --changelog-file, not both")
		}
		if form.Changelog, err = readSmallFile(*changelogFile, maxChangelogFile); err != nil {
			return err
		}
	}
	if *tauriSigFile != "" {
		if form.TauriSignature != "" {
			return usageError("give --tauri-signature or --tauri-signature-file, not both")
		}
		if form.TauriSignature, err = readSmallFile(*tauriSigFile, maxChangelogFile); err != nil {
			return err
		}
		form.TauriSignature = strings.TrimSpace(form.TauriSignature)
	}
	form.Testers, form.Groups, form.NoNotify = who.testers, who.groups, !who.notify
	session, err := common.useSession(pos[0])
	if err != nil {
		return err
	}
	var rel *uploader.Release
	var client *uploader.Client
	err = common.send(getenv, stderr, pos[0], func(c *uploader.Client, progress uploader.ProgressFunc) (err error) {
		client = c
		if session {
			if rel, err = c.UploadAppSession(ctx, pos[0], form, progress); !errors.Is(err, uploader.ErrNoSessions) {
				return err
			}
			fmt.Fprintln(stderr, "The server has no upload sessions: sending the file in one request.")
		}
		rel, err = c.UploadApp(ctx, pos[0], form, progress)
		return err
	})
	if err != nil {
		return err
	}
	if common.progress != "none" {
		fmt.Fprintf(stderr, "Uploaded %s %s (%s) as release %d of channel %s\n",
			rel.AppName, rel.ReleaseVersion, rel.BuildVersion, rel.Version, rel.Channel.Slug)
	}
	if rel.Testers != nil {
		fmt.Fprintln(stderr, distributedText(rel.Testers))
	}
	for _, w := range rel.Warnings {
		fmt.Fprintln(stderr, "Warning: "+w)
	}
	switch {
	case common.json:
		err = printJSON(stdout, rel.Raw)
	case *report == "markdown":
		_, err = fmt.Fprint(stdout, markdownReport(ctx, client, rel, stderr))
	default:
		_, err = fmt.Fprintln(stdout, rel.ReleaseURL)
	}
	if err != nil {
		return err
	}
	// After stdout, so a failure here still leaves the release's URL in the log.
	if err := writeGitHubOutputs(getenv, []string{client.Token, form.Password}, releaseOutputs(rel)); err != nil {
		return fmt.Errorf("%w: %v", errOutputs, err)
	}
	return nil
}

// markdownReport is what changed in an uploaded release since the release before it in its
// channel (the server's diff report; for the channel's first build a heading saying so), the size
// budgets it crosses, and the link to its release page. The upload has succeeded whatever happens
// here: a diff the server cannot give is said in the report and on stderr, not as a failure.
func markdownReport(ctx context.Context, c *uploader.Client, rel *uploader.Release, stderr io.Writer) string {
	var b strings.Builder
	d, err := c.ReleaseDiff(ctx, rel.ID)
	var apiErr *uploader.APIError
	switch {
	case err == nil:
		b.WriteString(d.Markdown)
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusUnprocessableEntity:
		b.WriteString(insights.Markdown(&insights.Diff{New: insights.Ref{BundleID: rel.BundleID, ReleaseVersion: rel.ReleaseVersion,
			BuildVersion: rel.BuildVersion}}))
	default:
		fmt.Fprintf(stderr, "slipway upload: the release is uploaded, but what changed could not be read: %v\n", err)
		fmt.Fprintf(&b, "### %s uploaded\n\nWhat changed could not be read from the server.\n", markdownText(rel.ReleaseVersion+" ("+rel.BuildVersion+")"))
	}
	if in := rel.Insights; in != nil && len(in.BudgetWarnings) > 0 {
		b.WriteString("\n")
		for _, w := range in.BudgetWarnings {
			fmt.Fprintf(&b, "> **Size budget:** %s\n", markdownText(w))
		}
	}
	if rel.ReleaseURL != "" {
		fmt.Fprintf(&b, "\n[Release page](%s)\n", rel.ReleaseURL)
	}
	return b.String()
}

// markdownText escapes Markdown's syntax in a line from the server (versions come from packages).
func markdownText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r':
			b.WriteRune(' ')
		case strings.ContainsRune("\\`*_{}[]()<>#+!|~", r):
			b.WriteRune('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// debugFileCmd: slipway debug-file upload FILE [flags].
func debugFileCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "upload" {
		return usageError("want: slipway debug-file upload FILE --channel-key KEY (see slipway debug-file upload -h)")
	}
	fs := flag.NewFlagSet("debug-file upload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), debugFileUsage); fs.PrintDefaults() }
	var common uploadFlags
	common.register(fs)
	var form uploader.DebugFileForm
	fs.StringVar(&form.ChannelKey, "channel-key", "", "channel of the app the debug file belongs to (required)")
	fs.StringVar(&form.ReleaseVersion, "release-version", "", "release version (Android; ignored for dSYMs)")
	fs.StringVar(&form.BuildVersion, "build-version", "", "build version (Android; ignored for dSYMs)")
	if wantsHelp(args[1:]) {
		return showUsage(fs, stdout)
	}
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("want exactly one FILE to upload (see slipway debug-file upload -h)")
	}
	if form.ChannelKey == "" {
		return usageError("--channel-key is required")
	}
	var df *uploader.DebugFile
	err = common.send(getenv, stderr, pos[0], func(c *uploader.Client, progress uploader.ProgressFunc) (err error) {
		df, err = c.UploadDebugFile(ctx, pos[0], form, progress)
		return err
	})
	if err != nil {
		return err
	}
	if common.progress != "none" {
		fmt.Fprintf(stderr, "Uploaded debug file %d for %s %s (%s), %d object(s)\n",
			df.ID, df.AppName, df.ReleaseVersion, df.BuildVersion, len(df.Metadata))
	}
	if common.json {
		return printJSON(stdout, df.Raw)
	}
	_, err = fmt.Fprintf(stdout, "%d\n%s\n", df.ID, df.FileURL)
	return err
}

// parseInterspersed parses flags that may come before and after positional arguments
// (`slipway upload app.ipa --url ...`), which package flag alone stops at, and returns the
// positional ones. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError(err.Error())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseCustomField reads NAME=VALUE (split at the first "=") or a JSON object
// {"name", "value", "icon"}. A three-part NAME=VALUE=ICON form is deliberately not offered: values
// are often URLs with "=" in their query, which it would split silently.
func parseCustomField(v string) (uploader.CustomField, error) {
	var f uploader.CustomField
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return f, fmt.Errorf(`want a JSON object {"name": "...", "value": "...", "icon": "..."}: %v`, err)
		}
	} else {
		name, value, ok := strings.Cut(v, "=")
		if !ok {
			return f, errors.New("want NAME=VALUE, or a JSON object with name, value and icon")
		}
		f = uploader.CustomField{Name: name, Value: value}
	}
	if f.Name = strings.TrimSpace(f.Name); f.Name == "" {
		return f, errors.New("the name must not be empty")
	}
	return f, nil
}

// readSmallFile reads a file of at most limit bytes.
func readSmallFile(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > limit {
		return "", fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return string(b), nil
}

// announce checks that the file can be uploaded, then says what is about to happen unless
// progress is off.
func announce(stderr io.Writer, progress, path, base string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory: zip it first (an .app or .dSYM bundle is uploaded as a zip)", path)
	}
	if progress == "none" {
		return nil
	}
	if u, err := url.Parse(base); err == nil {
		// Credentials may ride in a URL's user info or query; they are never printed.
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		base = u.String()
	}
	size := ""
	if st.Mode().IsRegular() {
		size = " (" + uploader.FormatBytes(st.Size()) + ")"
	}
	fmt.Fprintf(stderr, "Uploading %s%s to %s\n", path, size, strings.TrimRight(base, "/"))
	return nil
}

func start(r *uploader.Reporter) uploader.ProgressFunc {
	if r == nil {
		return nil
	}
	r.Start()
	return r.Update
}

func stop(r *uploader.Reporter) {
	if r != nil {
		r.Stop()
	}
}

func printJSON(w io.Writer, raw json.RawMessage) error {
	_, err := fmt.Fprintf(w, "%s\n", strings.TrimSpace(string(raw)))
	return err
}
