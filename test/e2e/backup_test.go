package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/e2e"
)

// TestRestoreOlderDatabaseOverNewerBucket is the restore drill of docs/operations.md ("Backup and
// restore"): build A is uploaded (package, icon, debug file), the database is dumped, build B is
// uploaded, and the older database is restored over the newer bucket, which now holds B's
// objects with no row naming them. `slipway gc --reconcile` keeps them while they are younger
// than --min-age, lists them with --dry-run, deleting nothing, then deletes them; the end state is
// consistent (every row's object exists, every object has its row) and A still downloads. Last,
// an object deleted behind Slipway's back is reported as missing, with a failing exit status.
func TestRestoreOlderDatabaseOverNewerBucket(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{Storage: e2e.S3})
	s := h.Start(t)
	token := h.CreateToken(t, "ci", "upload")
	dir := t.TempDir()
	env := []string{"SLIPWAY_TOKEN=" + token}
	icon := []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}

	upload := func(build, uuid string) (slug string, id int64, ipa []byte) {
		t.Helper()
		ipa = appletest.BuildIPA(appletest.IPAOptions{AppName: "Vault", BundleID: "com.example.backup", Version: "1.0", Build: build, Icons: icon})
		res := h.RunEnv(t, env, "upload", writeFile(t, dir, "Vault-"+build+".ipa", ipa), "--url", s.URL, "--progress", "none")
		if res.ExitCode != 0 {
			t.Fatalf("upload of build %s:\n%s", build, res)
		}
		slug, id = releaseURLParts(t, s, res.LastLine())
		dsym := writeFile(t, dir, "Vault-"+build+".dSYM.zip", debuginfotest.BuildDSYMZip(debuginfotest.DSYM{
			Path: "Vault.app.dSYM", Identifier: "com.example.backup", ReleaseVersion: "1.0", BuildVersion: build,
			Archs: []debuginfotest.Arch{{Name: "arm64", UUID: uuid}}}))
		if res := h.RunEnv(t, env, "debug-file", "upload", dsym, "--url", s.URL, "--channel-key", slug); res.ExitCode != 0 {
			t.Fatalf("debug-file upload of build %s:\n%s", build, res)
		}
		return slug, id, ipa
	}

	slug, idA, ipaA := upload("1", "0B0C0D0E-1111-2222-3333-444455556666")
	objectsA := h.Objects(t)
	if len(objectsA) != 3 {
		t.Fatalf("build A stored %d objects, want 3 (package, icon, debug file): %v", len(objectsA), objectsA)
	}
	restore := backUpDatabase(t, h, &s)

	_, idB, _ := upload("2", "0B0C0D0E-1111-2222-3333-777788889999")
	objectsB := without(h.Objects(t), objectsA)
	if len(objectsB) != 3 {
		t.Fatalf("build B stored %d new objects, want 3: %v", len(objectsB), objectsB)
	}
	// And a resumable upload session with one part in the bucket, never completed.
	r := s.Do(t, http.MethodPost, "/api/uploads", strings.NewReader(fmt.Sprintf(`{"kind":"app","filename":"Big.ipa","size":1000,"channel_key":%q}`, slug)),
		"Authorization", "Token "+token, "Content-Type", "application/json")
	var sess struct {
		Parts []struct{ URL string }
	}
	r.JSON(t, &sess)
	if r.Status != http.StatusCreated || len(sess.Parts) != 1 {
		t.Fatalf("starting an upload session: %d %s", r.Status, r.Body)
	}
	req, _ := http.NewRequest(http.MethodPut, sess.Parts[0].URL, bytes.NewReader(make([]byte, 1000)))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT of the session's part: %v %v", resp, err)
	}
	unfinished := h.MultipartUploads(t)
	if len(unfinished) != 1 {
		t.Fatalf("multipart uploads in the bucket: %v, want the session's", unfinished)
	}

	// The restore: replicas stopped, the older database back, the bucket as it is.
	s.Stop(t)
	restore()

	// With the default --min-age (1 h), objects this new are kept, and said so.
	res := h.MustRun(t, "gc", "--reconcile", "--dry-run")
	for _, k := range objectsB {
		if !strings.Contains(res.Stdout, "kept "+k+" ") {
			t.Errorf("dry run with the default --min-age does not say it keeps %s:\n%s", k, res.Stdout)
		}
	}
	if len(keysAfter(res.Stdout, "would delete ")) != 0 {
		t.Errorf("dry run with the default --min-age would delete objects younger than an hour:\n%s", res.Stdout)
	}

	// --dry-run names B's objects, and only those, and deletes nothing.
	res = h.MustRun(t, "gc", "--reconcile", "--dry-run", "--min-age", "0s")
	if got := keysAfter(res.Stdout, "would delete "); !sameSet(got, objectsB) {
		t.Errorf("dry run would delete %v, want B's objects %v:\n%s", got, objectsB, res.Stdout)
	}
	if got := keysAfter(res.Stdout, "would abort unfinished upload "); !slices.Equal(got, unfinished) {
		t.Errorf("dry run would abort %v, want the session's upload %v:\n%s", got, unfinished, res.Stdout)
	}
	if !strings.Contains(res.LastLine(), "would delete 3 objects no row names") || !strings.Contains(res.LastLine(), "would abort 1 unfinished uploads") ||
		!strings.Contains(res.LastLine(), "0 rows name a missing object") {
		t.Errorf("dry run summary: %q", res.LastLine())
	}
	if got := h.Objects(t); !sameSet(got, append(slices.Clone(objectsA), objectsB...)) || len(h.MultipartUploads(t)) != 1 {
		t.Fatalf("the dry run changed the bucket: %v, uploads %v", got, h.MultipartUploads(t))
	}
	if strings.Contains(res.Stdout, "X-Amz-") || strings.Contains(res.Stdout, "http") {
		t.Errorf("reconcile printed a URL:\n%s", res.Stdout)
	}

	res = h.MustRun(t, "gc", "--reconcile", "--min-age", "0s")
	if got := keysAfter(res.Stdout, "deleted "); !sameSet(got, objectsB) {
		t.Errorf("reconcile deleted %v, want B's objects %v:\n%s", got, objectsB, res.Stdout)
	}

	if got := keysAfter(res.Stdout, "aborted unfinished upload "); !slices.Equal(got, unfinished) {
		t.Errorf("reconcile aborted %v, want %v:\n%s", got, unfinished, res.Stdout)
	}
	if left := h.MultipartUploads(t); len(left) != 0 {
		t.Errorf("unfinished uploads left: %v", left)
	}

	// Consistent: the rows name exactly the objects the bucket holds.
	objects := h.Objects(t)
	if !sameSet(objects, objectsA) {
		t.Errorf("after reconciling, the bucket holds %v, want A's %v", objects, objectsA)
	}
	if rows := rowKeys(t, h.DatabaseURL); !sameSet(rows, objects) {
		t.Errorf("rows name %v, the bucket holds %v", rows, objects)
	}
	if again := h.MustRun(t, "gc", "--reconcile", "--min-age", "0s"); !strings.Contains(again.LastLine(), "deleted 0 objects") {
		t.Errorf("a second reconcile: %s", again.LastLine())
	}

	// A serves and downloads, bytes intact; B is gone.
	s = h.Start(t)
	if rel := latestRelease(t, s, slug); rel.BuildVersion != "1" {
		t.Errorf("latest after the restore: %+v", rel)
	}
	r = s.Get(t, fmt.Sprintf("/download/releases/%d", idA))
	if r.Status != http.StatusFound {
		t.Fatalf("download of A: %d %s", r.Status, r.Body)
	}
	if body := fetch(t, r.Header.Get("Location")); !bytes.Equal(body, ipaA) {
		t.Errorf("A downloads %d bytes, want its %d", len(body), len(ipaA))
	}
	if r := s.Get(t, fmt.Sprintf("/download/releases/%d", idB)); r.Status != http.StatusNotFound {
		t.Errorf("download of B after the restore: %d", r.Status)
	}

	// An object deleted behind Slipway's back is reported, not "fixed", and fails the check.
	var iconKey string
	for _, k := range objectsA {
		if strings.HasPrefix(k, "icons/") {
			iconKey = k
		}
	}
	if _, err := h.S3.Client().DeleteObject(context.Background(), &awss3.DeleteObjectInput{Bucket: &h.S3.Bucket, Key: &iconKey}); err != nil {
		t.Fatal(err)
	}
	res = h.Run(t, "gc", "--reconcile", "--min-age", "0s")
	if want := fmt.Sprintf("missing %s: the icon of release %d", iconKey, idA); res.ExitCode != 1 || !strings.Contains(res.Stdout, want) ||
		!strings.Contains(res.Stderr, "1 rows name objects the storage does not hold") {
		t.Errorf("reconcile with A's icon gone: want exit 1 and %q\n%s", want, res)
	}
	if rows := rowKeys(t, h.DatabaseURL); !slices.Contains(rows, iconKey) {
		t.Errorf("the icon's row was changed: %v", rows)
	}
}

// backUpDatabase copies the harness's database as an operator would and returns the restore,
// which replaces the database with the copy (the servers must be stopped). It uses pg_dump and
// pg_restore when they are on the PATH and not older than the server (what docs/operations.md
// prescribes); otherwise a template copy (CREATE DATABASE ... TEMPLATE), which needs no other
// connection to the database at that moment, so *s is stopped for it and another server started.
// The test's log says which.
func backUpDatabase(t *testing.T, h *e2e.Harness, s **e2e.Server) (restore func()) {
	t.Helper()
	ctx := context.Background()
	base := os.Getenv("SLIPWAY_TEST_DATABASE_URL")
	u, err := url.Parse(h.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin := func(sql string) {
		t.Helper()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		for i := 0; ; i++ { // a template being copied must have no other connection (Postgres waits 5 s for them)
			if _, err = c.Exec(ctx, sql); err == nil || i == 5 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	recreate := func(template string) {
		admin(`DROP DATABASE ` + pgx.Identifier{name}.Sanitize() + ` WITH (FORCE)`)
		admin(`CREATE DATABASE ` + pgx.Identifier{name}.Sanitize() + template)
	}

	if usable, why := pgDumpUsable(t, h.DatabaseURL); usable {
		t.Log("backing up with pg_dump --format=custom and restoring with pg_restore")
		dump := filepath.Join(t.TempDir(), "slipway.dump")
		if out, err := exec.Command("pg_dump", "--format=custom", "--file", dump, "--dbname", h.DatabaseURL).CombinedOutput(); err != nil {
			t.Fatalf("pg_dump: %v\n%s", err, out)
		}
		return func() {
			recreate("")
			if out, err := exec.Command("pg_restore", "--no-owner", "--exit-on-error", "--single-transaction", "--dbname", h.DatabaseURL, dump).CombinedOutput(); err != nil {
				t.Fatalf("pg_restore: %v\n%s", err, out)
			}
		}
	} else {
		t.Logf("backing up with CREATE DATABASE ... TEMPLATE: %s", why)
	}
	backup := name + "_backup"
	(*s).Stop(t)
	admin(`CREATE DATABASE ` + pgx.Identifier{backup}.Sanitize() + ` TEMPLATE ` + pgx.Identifier{name}.Sanitize())
	t.Cleanup(func() { admin(`DROP DATABASE IF EXISTS ` + pgx.Identifier{backup}.Sanitize() + ` WITH (FORCE)`) })
	*s = h.Start(t)
	return func() { recreate(` TEMPLATE ` + pgx.Identifier{backup}.Sanitize()) }
}

// pgDumpUsable reports whether pg_dump and pg_restore are installed and at least as new as the
// server (an older pg_dump refuses a newer server), and if not, why.
func pgDumpUsable(t *testing.T, dbURL string) (bool, string) {
	for _, tool := range []string{"pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			return false, tool + " is not installed"
		}
	}
	out, err := exec.Command("pg_dump", "--version").Output()
	m := regexp.MustCompile(`(\d+)\.`).FindSubmatch(out)
	if err != nil || m == nil {
		return false, fmt.Sprintf("pg_dump --version: %v %q", err, out)
	}
	client, _ := strconv.Atoi(string(m[1]))
	c, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var server int
	if err := c.QueryRow(context.Background(), `SELECT current_setting('server_version_num')::int / 10000`).Scan(&server); err != nil {
		t.Fatal(err)
	}
	if client < server {
		return false, fmt.Sprintf("pg_dump %d is older than the server (%d)", client, server)
	}
	return true, ""
}

// rowKeys lists the keys the database's rows name: releases' packages and icons, debug files,
// and the collector's ledger.
func rowKeys(t *testing.T, dbURL string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, _ := c.Query(ctx, `SELECT object_key FROM releases UNION ALL SELECT icon_key FROM releases WHERE icon_key IS NOT NULL
		UNION ALL SELECT object_key FROM debug_files UNION ALL SELECT key FROM storage_objects`)
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// keysAfter returns the key following prefix at the start of each line of out.
func keysAfter(out, prefix string) []string {
	var keys []string
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			keys = append(keys, strings.Fields(rest)[0])
		}
	}
	return keys
}

func without(all, some []string) []string {
	return slices.DeleteFunc(slices.Clone(all), func(k string) bool { return slices.Contains(some, k) })
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// fetch GETs a URL (a presigned one) and returns the body of its 200.
func fetch(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the download: %d %v", resp.StatusCode, err)
	}
	return body
}
