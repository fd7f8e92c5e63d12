package postgres_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
	"github.com/slipwayhq/slipway/test/testkit"
)

// release records an auto-created release of app with an icon, its objects marked pending first
// as an upload's are.
func release(t *testing.T, db *postgres.DB, app, build string) *distribution.ReleaseContext {
	t.Helper()
	ctx := context.Background()
	pkg, icon := "packages/"+app+"-"+build, "icons/"+app+"-"+build
	for _, k := range []string{pkg, icon} {
		if err := db.MarkPending(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	r := distribution.Release{BundleID: "com.example." + app, ReleaseVersion: "1.0", BuildVersion: build, Platform: "ios", Format: "ipa",
		Size: 10, SHA256: "x", ObjectKey: pkg, Filename: "a.ipa", IconKey: &icon,
		Changelog: []distribution.ChangelogEntry{{Message: "first"}}}
	var rc *distribution.ReleaseContext
	// The steps of an auto-creating upload (uploads.Builds sequences them the same way).
	err := db.InUploadTx(ctx, func(tx uploads.UploadTx) error {
		if err := tx.LockAppName(ctx, app); err != nil {
			return err
		}
		appID, err := tx.AppNamed(ctx, app)
		if err == nil && appID == 0 {
			appID, err = tx.CreateApp(ctx, app)
		}
		if err != nil {
			return err
		}
		schemeID, err := tx.EnsureScheme(ctx, appID, "Adhoc")
		if err != nil {
			return err
		}
		ch, err := tx.ChannelFor(ctx, schemeID, "ios")
		if err == nil && ch == nil {
			ch, err = tx.CreateChannel(ctx, &distribution.Channel{SchemeID: schemeID, Name: "ios", DeviceType: "ios", BundleID: "*", DownloadFilenameType: "original"})
		}
		if err != nil {
			return err
		}
		r.ChannelID = ch.ID
		if r.Version, err = tx.NextVersion(ctx, ch.ID); err != nil {
			return err
		}
		id, err := tx.InsertRelease(ctx, &r, nil)
		if err != nil {
			return err
		}
		if err := tx.Claim(ctx, pkg, icon); err != nil {
			return err
		}
		rc, err = tx.Release(ctx, id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func deletedKeys(t *testing.T, db *postgres.DB) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT key FROM storage_objects WHERE state = 'deleted' ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		keys = append(keys, k)
	}
	return keys
}

// Names and keys are unique where Zealot's are: a scheme name within its app (the same name in
// another app is fine), a channel key everywhere; writes into something missing are not found.
func TestSchemeAndChannelConstraints(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	a, _ := db.CreateApp(ctx, "A")
	b, _ := db.CreateApp(ctx, "B")
	sa, err := db.CreateScheme(ctx, &distribution.Scheme{AppID: a.ID, Name: "Beta", NewBuildCallout: true})
	if err != nil || sa.Name != "Beta" || !sa.NewBuildCallout {
		t.Fatalf("create scheme: %+v %v", sa, err)
	}
	if _, err := db.CreateScheme(ctx, &distribution.Scheme{AppID: a.ID, Name: "Beta"}); errs.KindOf(err) != errs.Conflict {
		t.Fatalf("twin scheme: %v", err)
	}
	if _, err := db.CreateScheme(ctx, &distribution.Scheme{AppID: b.ID, Name: "Beta"}); err != nil {
		t.Fatalf("same name in another app: %v", err)
	}
	if _, err := db.CreateScheme(ctx, &distribution.Scheme{AppID: 999, Name: "X"}); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("scheme of a missing app: %v", err)
	}
	c, err := db.CreateChannel(ctx, &distribution.Channel{SchemeID: sa.ID, Name: "iOS", DeviceType: "ios", BundleID: "*", DownloadFilenameType: "original"})
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(c.Slug) {
		t.Fatalf("generated key: %+v %v", c, err)
	}
	if _, err := db.CreateChannel(ctx, &distribution.Channel{SchemeID: sa.ID, Name: "Twin", Slug: c.Slug, DeviceType: "ios", BundleID: "*", DownloadFilenameType: "original"}); errs.KindOf(err) != errs.Conflict {
		t.Fatalf("twin key: %v", err)
	}
	if _, err := db.CreateChannel(ctx, &distribution.Channel{SchemeID: 999, Name: "X", DeviceType: "ios", BundleID: "*", DownloadFilenameType: "original"}); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("channel of a missing scheme: %v", err)
	}
	if _, err := db.UpdateChannel(ctx, &distribution.Channel{ID: 999, Name: "X", Slug: "x", DeviceType: "ios", BundleID: "*", DownloadFilenameType: "original"}); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("update of a missing channel: %v", err)
	}
	// A value the schema refuses is the client's error, not a 500.
	if _, err := db.CreateChannel(ctx, &distribution.Channel{SchemeID: sa.ID, Name: "X", Slug: "bad slug", DeviceType: "ios", BundleID: "*", DownloadFilenameType: "original"}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("a slug the schema refuses: %v", err)
	}
	if _, err := db.CreateApp(ctx, "a\x00b"); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("a NUL byte: %v", err)
	}
}

// Deleting a release, a channel, a scheme or an app records every object they owned as deleted
// (for the collector) in the same transaction, and returns their keys.
func TestDeletesHandObjectsToTheCollector(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	one := release(t, db, "one", "1")
	two := release(t, db, "one", "2")
	three := release(t, db, "three", "1")
	keys, err := db.DeleteRelease(ctx, one.ID, distribution.SystemActor("test"), nil)
	if err != nil || !slices.Equal(keys, []string{"packages/one-1", "icons/one-1"}) {
		t.Fatalf("delete release: %v %v", keys, err)
	}
	if _, err := db.DeleteRelease(ctx, one.ID, distribution.SystemActor("test"), nil); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("delete twice: %v", err)
	}
	keys, err = db.DeleteChannel(ctx, two.Channel.ID, nil)
	if err != nil || len(keys) != 2 {
		t.Fatalf("delete channel: %v %v", keys, err)
	}
	if _, err := db.GetRelease(ctx, two.ID); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("the channel's release survived: %v", err)
	}
	keys, err = db.DeleteScheme(ctx, three.Scheme.ID, nil)
	if err != nil || len(keys) != 2 {
		t.Fatalf("delete scheme: %v %v", keys, err)
	}
	want := []string{"icons/one-1", "icons/one-2", "icons/three-1", "packages/one-1", "packages/one-2", "packages/three-1"}
	if got := deletedKeys(t, db); !slices.Equal(got, want) {
		t.Fatalf("objects handed to the collector: %v, want %v", got, want)
	}
	for _, f := range []func() ([]string, error){
		func() ([]string, error) { return db.DeleteScheme(ctx, 999, nil) },
		func() ([]string, error) { return db.DeleteChannel(ctx, 999, nil) },
		func() ([]string, error) { return db.DestroyApp(ctx, 999) },
	} {
		if _, err := f(); errs.KindOf(err) != errs.NotFound {
			t.Errorf("delete of a missing row: %v", err)
		}
	}
}

// A release edit round-trips its changelog and custom fields and moves updated_at.
func TestUpdateRelease(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	rc := release(t, db, "edit", "1")
	r := rc.Release
	r.Changelog = []distribution.ChangelogEntry{{Message: "fixed", Author: "Ada", Email: "ada@example.com", Date: "2026-11-24 10:00:00"}}
	r.CustomFields = []distribution.CustomField{{Name: "QA", Value: "passed", Icon: "fa fa-check"}}
	r.ReleaseVersion, r.Branch = "1.0.1", "main"
	time.Sleep(10 * time.Millisecond)
	got, err := db.UpdateRelease(ctx, &r)
	if err != nil || !slices.Equal(got.Changelog, r.Changelog) || !slices.Equal(got.CustomFields, r.CustomFields) ||
		got.ReleaseVersion != "1.0.1" || !got.UpdatedAt.After(rc.UpdatedAt) || got.Version != rc.Version {
		t.Fatalf("update: %+v %v", got, err)
	}
	r.ID = 999
	if _, err := db.UpdateRelease(ctx, &r); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("update of a missing release: %v", err)
	}
}

// Devices: one row per UDID however many clients sync it at once; fields not sent keep their value.
func TestUpsertDevice(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	d, created, err := db.UpsertDevice(ctx, &distribution.Device{UDID: "00008030-001A2B3C4D5E6F70", Name: "QA", Model: "iPhone 15"})
	if err != nil || !created || d.Source != "api" {
		t.Fatalf("create: %+v %v %v", d, created, err)
	}
	d, created, err = db.UpsertDevice(ctx, &distribution.Device{UDID: "00008030-001A2B3C4D5E6F70", Name: "QA 2"})
	if err != nil || created || d.Name != "QA 2" || d.Model != "iPhone 15" {
		t.Fatalf("update: %+v %v %v", d, created, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	creations := 0
	for i := range 20 {
		wg.Go(func() {
			_, c, err := db.UpsertDevice(ctx, &distribution.Device{UDID: "00008110-00AA11BB22CC33DD", Name: fmt.Sprint("race ", i)})
			if err != nil {
				t.Error(err)
			}
			if c {
				mu.Lock()
				creations++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	devices, err := db.ListDevices(ctx, distribution.Page{Page: 1, PerPage: 100})
	if err != nil || len(devices) != 2 || creations != 1 {
		t.Fatalf("%d devices, %d creations: %v", len(devices), creations, err)
	}
	if _, _, err := db.UpsertDevice(ctx, &distribution.Device{UDID: "not-a-udid", Name: "x"}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("a UDID the schema refuses: %v", err)
	}
}

// Debug files are found by versions, by a slice's UUID, and by either checksum; revoking a token
// by id works once.
func TestFindDebugFileAndRevokeByID(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	rc := release(t, db, "dbg", "1")
	if err := db.MarkPending(ctx, "debug_files/d"); err != nil {
		t.Fatal(err)
	}
	var id int64
	err := db.InDebugFileTx(ctx, func(tx uploads.DebugFileTx) error {
		var err error
		id, _, err = tx.InsertDebugFile(ctx, &distribution.DebugFile{AppID: rc.App.ID, ChannelID: rc.Channel.ID, DeviceType: "ios", ReleaseVersion: "1.0",
			BuildVersion: "1", SHA256: "aa", MD5: "bb", Size: 1, ObjectKey: "debug_files/d", Filename: "d.zip"})
		if err != nil {
			return err
		}
		if err := tx.ReplaceMetadata(ctx, id, []distribution.DebugFileMetadata{{UUID: "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9", Type: "arm64", Object: "Dbg"}}); err != nil {
			return err
		}
		return tx.Claim(ctx, "debug_files/d")
	})
	if err != nil {
		t.Fatal(err)
	}
	df, err := db.GetDebugFile(ctx, id)
	if err != nil || df.MD5 != "bb" {
		t.Fatalf("create debug file: %+v %v", df, err)
	}
	for _, q := range []uploads.DebugFileQuery{
		{AppID: rc.App.ID, DeviceType: "ios", ReleaseVersion: "1.0", BuildVersion: "1"},
		{UUID: "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9"}, {SHA256: "aa"}, {MD5: "bb"},
	} {
		if got, err := db.FindDebugFile(ctx, q); err != nil || got.ID != df.ID {
			t.Errorf("%+v: %v %v", q, got, err)
		}
	}
	for _, q := range []uploads.DebugFileQuery{{AppID: rc.App.ID, DeviceType: "android"}, {UUID: "nope"}, {MD5: "cc"}} {
		if _, err := db.FindDebugFile(ctx, q); errs.KindOf(err) != errs.NotFound {
			t.Errorf("%+v: %v", q, err)
		}
	}
	_, tok, err := db.CreateToken(ctx, "ci", distribution.ScopeUpload)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.RevokeTokenByID(ctx, tok.ID, distribution.SystemActor("cli")); err != nil || got.RevokedAt == nil {
		t.Fatalf("revoke: %+v %v", got, err)
	}
	if _, err := db.RevokeTokenByID(ctx, tok.ID, distribution.SystemActor("cli")); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("revoke twice: %v", err)
	}
}

// Every change a reader could see is announced, from the writing transaction and only once it
// commits: the read caches of all replicas depend on it (migration 3).
func TestChangesAreAnnounced(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := testenv.DB(t)
	changes := make(chan distribution.Change, 100)
	connected := make(chan struct{}, 10)
	go func() {
		_ = db.ListenChanges(ctx, func() { connected <- struct{}{} }, func(c distribution.Change) { changes <- c })
	}()
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener never connected")
	}
	next := func(what string) distribution.Change {
		t.Helper()
		select {
		case c := <-changes:
			return c
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no announcement", what)
		}
		return distribution.Change{}
	}
	rc := release(t, db, "news", "1")
	if c := next("upload"); c.ChannelID != rc.Channel.ID {
		t.Fatalf("upload announced %+v", c)
	}
	if _, err := db.RenameApp(ctx, rc.App.ID, "News 2"); err != nil {
		t.Fatal(err)
	}
	if c := next("rename"); c.AppID != rc.App.ID {
		t.Fatalf("rename announced %+v", c)
	}
	sc := rc.Scheme
	sc.Name = "Beta"
	if _, err := db.UpdateScheme(ctx, &sc); err != nil {
		t.Fatal(err)
	}
	if c := next("scheme"); c.SchemeID != sc.ID {
		t.Fatalf("scheme announced %+v", c)
	}
	ch := rc.Channel
	ch.Name = "iPhone"
	if _, err := db.UpdateChannel(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	if c := next("channel"); c.ChannelID != ch.ID {
		t.Fatalf("channel announced %+v", c)
	}
	// A rolled-back write announces nothing; a no-op touch neither.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = tx.Exec(ctx, `UPDATE apps SET name = 'Ghost' WHERE id = $1`, rc.App.ID)
	_ = tx.Rollback(ctx)
	if _, err := db.Pool.Exec(ctx, `UPDATE schemes SET updated_at = now() WHERE id = $1`, sc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteRelease(ctx, rc.ID, distribution.SystemActor("test"), nil); err != nil {
		t.Fatal(err)
	}
	if c := next("delete"); c.ChannelID != rc.Channel.ID {
		t.Fatalf("after a rollback and a no-op, the next announcement is %+v, want the delete", c)
	}
}

// Password-attempt rows older than the client window count nothing, so an attempt at the channel
// prunes them (guesses from ever-new addresses cannot grow the table); rows still in the window,
// the channel-wide row and other channels' rows stay.
func TestPasswordAttemptsPruneStaleRows(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	a, b := release(t, db, "a", "1"), release(t, db, "b", "1")
	limit := access.AttemptLimit{Free: 5, Window: 15 * time.Minute}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO password_failures (channel_id, client, failures, last_at) VALUES
		($1, '10.0.0.1', 3, now() - interval '1 hour'), ($1, '10.0.0.2', 3, now() - interval '5 minutes'),
		($2, '10.0.0.3', 3, now() - interval '1 hour')`, a.Channel.ID, b.Channel.ID); err != nil {
		t.Fatal(err)
	}
	if left, err := db.ReservePasswordAttempt(ctx, a.Channel.ID, "10.0.0.9", limit, access.AttemptLimit{Free: 30, Window: limit.Window}); err != nil || left != 0 {
		t.Fatalf("reserve: %v %v", left, err)
	}
	var got []string
	rows, _ := db.Pool.Query(ctx, `SELECT channel_id || '/' || client FROM password_failures ORDER BY 1`)
	for rows.Next() {
		var s string
		rows.Scan(&s)
		got = append(got, s)
	}
	want := []string{fmt.Sprintf("%d/*", a.Channel.ID), fmt.Sprintf("%d/10.0.0.2", a.Channel.ID), fmt.Sprintf("%d/10.0.0.9", a.Channel.ID),
		fmt.Sprintf("%d/10.0.0.3", b.Channel.ID)}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

// A reservation counts its attempt even when the client's row went between the reservation's
// insert and its lock (a right password cleared it, or another client's attempt pruned it): the
// hostile suite once saw 23 guesses from one address compared where 15 may be, when the right
// password was compared while a burst of wrong ones waited for the channel's row. Here the row
// is deleted while a reservation waits for the channel-wide lock; the attempt must still count.
func TestPasswordAttemptCountedWhenItsRowWent(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	a := release(t, db, "a", "1")
	limit := access.AttemptLimit{Free: 5, Window: 15 * time.Minute}
	const client = "10.0.0.7"
	if _, err := db.Pool.Exec(ctx, `INSERT INTO password_failures (channel_id, client, failures, last_at) VALUES
		($1, '*', 0, 'epoch'), ($1, $2, 2, now())`, a.Channel.ID, client); err != nil {
		t.Fatal(err)
	}
	hold, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx) //nolint:errcheck
	if _, err := hold.Exec(ctx, `SELECT 1 FROM password_failures WHERE channel_id = $1 AND client = '*' FOR UPDATE`, a.Channel.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.ReservePasswordAttempt(ctx, a.Channel.ID, client, limit, access.AttemptLimit{Free: 30, Window: limit.Window})
		done <- err
	}()
	testkit.Eventually(t, 30*time.Second, "the reservation to wait for the channel's row", func() bool {
		var n int
		_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return n == 1
	})
	if _, err := db.Pool.Exec(ctx, `DELETE FROM password_failures WHERE channel_id = $1 AND client = $2`, a.Channel.ID, client); err != nil {
		t.Fatal(err)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var failures int
	if err := db.Pool.QueryRow(ctx, `SELECT coalesce((SELECT failures FROM password_failures WHERE channel_id = $1 AND client = $2), 0)`,
		a.Channel.ID, client).Scan(&failures); err != nil {
		t.Fatal(err)
	}
	if failures != 1 {
		t.Fatalf("the client's count after its attempt: %d, want 1 (the attempt went uncounted)", failures)
	}
}
