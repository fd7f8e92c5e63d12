package e2e_test

import (
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/test/e2e"
)

// TestCLIInsights (issue 24): `slipway upload --report markdown` prints what changed since the
// channel's previous build (and, for its first, says so), with the size budgets crossed and the
// release page's link; `slipway insights backfill` records the insights of releases that have
// none, and a second run finds nothing left to do.
func TestCLIInsights(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t)
	token := h.CreateToken(t, "ci", "upload")
	dir := t.TempDir()
	apk := func(name string, code int, perms ...string) string {
		return writeFile(t, dir, name, androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
			Package: "com.example.report", VersionCode: code, VersionName: "1." + strings.Repeat("0", code), Label: "Report",
			Permissions: perms}}))
	}
	run := func(wantExit int, args ...string) e2e.Result {
		t.Helper()
		res := h.Run(t, append(args, "--url", s.URL, "--token", token, "--progress", "none")...)
		if res.ExitCode != wantExit {
			t.Fatalf("exit %d, want %d:\n%s", res.ExitCode, wantExit, res)
		}
		assertNoSecret(t, res, token)
		return res
	}

	res := run(0, "upload", apk("a.apk", 1, "android.permission.INTERNET"), "--report", "markdown")
	if !strings.Contains(res.Stdout, ": first build") || !strings.Contains(res.Stdout, "[Release page]("+s.URL+"/channels/") {
		t.Errorf("first build's report:\n%s", res.Stdout)
	}
	slug := res.Stdout[strings.Index(res.Stdout, "/channels/")+len("/channels/"):]
	slug = slug[:strings.Index(slug, "/")]
	h.QueryInt(t, `WITH u AS (UPDATE channels SET max_size_bytes = 1 WHERE slug = $1 RETURNING 1) SELECT count(*) FROM u`, slug)

	res = run(0, "upload", apk("b.apk", 2, "android.permission.INTERNET", "android.permission.CAMERA"), "--channel-key", slug, "--report", "markdown")
	for _, want := range []string{"### What changed since 1.0 (1)", "- new permission: android.permission.CAMERA",
		"> **Size budget:** the build is", "over the channel's maximum of 1 B", "[Release page]("} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, res.Stdout)
		}
	}
	if res := h.Run(t, "upload", apk("c.apk", 3), "--url", s.URL, "--token", token, "--report", "html"); res.ExitCode != 2 {
		t.Errorf("--report html: exit %d\n%s", res.ExitCode, res)
	}

	// Releases recorded before insights were kept: the backfill gives them theirs.
	h.QueryInt(t, `WITH d AS (DELETE FROM release_insights RETURNING 1) SELECT count(*) FROM d`)
	res = h.MustRun(t, "insights", "backfill", "--concurrency", "2")
	if !strings.Contains(res.Stdout, "done: 2 releases given their insights, 0 failed, of 2 without") {
		t.Errorf("backfill:\n%s", res)
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM release_insights`); n != 2 {
		t.Errorf("%d snapshots after the backfill, want 2", n)
	}
	res = h.MustRun(t, "insights", "backfill")
	if !strings.Contains(res.Stdout, "done: 0 releases given their insights, 0 failed, of 0 without") {
		t.Errorf("second backfill:\n%s", res)
	}
}
