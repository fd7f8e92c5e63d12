package reliability

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// checkConsistent runs the collector with no grace period (`slipway gc --grace 0s`; call it only
// while nothing is uploading) and then checks that storage follows the database:
//   - every release has its app (no release row left by a destroyed app);
//   - the stored objects are exactly the referenced ones (releases.object_key and icon_key,
//     debug_files.object_key): no object without a row, no row without an object, and with the
//     filesystem backend no temporary file of an unfinished write;
//   - every package and debug file object is complete: its stored size is the size recorded;
//   - no multipart upload is left unfinished (S3), and no bookkeeping row is left over.
func checkConsistent(t *testing.T, e *env) {
	t.Helper()
	if res := e.h.Run(t, "gc", "--grace", "0s"); res.ExitCode != 0 {
		t.Errorf("slipway gc --grace 0s failed:\n%s", res)
	}
	// A replica's own collector may hold a row locked at this moment (gc skips it); it finishes
	// the deletion shortly.
	testkit.EventuallyOK(t, time.Minute, "no storage bookkeeping rows after gc --grace 0s", func() error {
		if n := queryInt(t, e.db, `SELECT count(*) FROM storage_objects`); n != 0 {
			return fmt.Errorf("%d left", n)
		}
		return nil
	})
	if n := queryInt(t, e.db, `SELECT count(*) FROM releases r LEFT JOIN channels c ON c.id = r.channel_id
		LEFT JOIN schemes s ON s.id = c.scheme_id LEFT JOIN apps a ON a.id = s.app_id WHERE a.id IS NULL`); n != 0 {
		t.Errorf("%d release rows without their app", n)
	}
	if n := queryInt(t, e.db, `SELECT count(*) FROM debug_files d LEFT JOIN apps a ON a.id = d.app_id WHERE a.id IS NULL`); n != 0 {
		t.Errorf("%d debug file rows without their app", n)
	}

	// key → recorded size (-1: an icon, whose size is not recorded).
	want := map[string]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	rows, err := e.db.Query(ctx, `SELECT object_key, size FROM releases
		UNION ALL SELECT icon_key, -1 FROM releases WHERE icon_key IS NOT NULL
		UNION ALL SELECT object_key, size FROM debug_files`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key string
		var size int64
		if err := rows.Scan(&key, &size); err != nil {
			t.Fatal(err)
		}
		want[key] = size
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	stored := listStorage(t, e.h)
	for key, size := range want {
		got, ok := stored[key]
		switch {
		case !ok:
			t.Errorf("a row references %s, which is not in storage", key)
		case size >= 0 && got != size:
			t.Errorf("object %s holds %d bytes, its row records %d: incomplete", key, got, size)
		}
	}
	for key := range stored {
		if _, ok := want[key]; !ok {
			t.Errorf("object %s is in storage without a row (after gc)", key)
		}
	}
	if e.h.S3 != nil {
		if mu := e.h.MultipartUploads(t); len(mu) != 0 {
			t.Errorf("unfinished multipart uploads left: %v", mu)
		}
	}
}

// multipartUpload is an unfinished multipart upload.
type multipartUpload struct{ key, id string }

// openUploads lists the bucket's unfinished multipart uploads. MinIO lists them without a key
// prefix only while the process that started them runs, so tests note them before a restart.
func openUploads(t *testing.T, e *env) []multipartUpload {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	out, err := e.h.S3.Client().ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &e.h.S3.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	var ups []multipartUpload
	for _, u := range out.Uploads {
		ups = append(ups, multipartUpload{aws.ToString(u.Key), aws.ToString(u.UploadId)})
	}
	return ups
}

// uploadAborted reports whether the multipart upload is gone (aborted or completed), by its id.
func uploadAborted(t *testing.T, e *env, u multipartUpload) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	_, err := e.h.S3.Client().ListParts(ctx, &awss3.ListPartsInput{Bucket: &e.h.S3.Bucket, Key: &u.key, UploadId: &u.id})
	var nsu *types.NoSuchUpload
	if errors.As(err, &nsu) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchUpload" {
		return true
	}
	if err != nil {
		t.Logf("listing the parts of %s: %v", u.key, err)
	}
	return false
}

// listStorage returns every stored object (for the filesystem backend, every file, temporary
// ones included) with its size.
func listStorage(t *testing.T, h *e2e.Harness) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	if h.S3 == nil {
		err := filepath.WalkDir(h.StorageDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(h.StorageDir, p)
			out[filepath.ToSlash(rel)] = info.Size()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	p := awss3.NewListObjectsV2Paginator(h.S3.Client(), &awss3.ListObjectsV2Input{Bucket: &h.S3.Bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return out
}

// serverErrorLine matches an access-log line of a 500 (or any 5xx other than 503), an internal
// error, or a panic.
var serverErrorLine = regexp.MustCompile(`"status":5(0[0-24-9]|[1-9]\d)|"msg":"internal error"|panic:`)

// noServerErrors fails if any replica answered a 500 (a dependency outage must be a 503) or
// panicked.
func noServerErrors(t *testing.T, servers ...*e2e.Server) {
	t.Helper()
	for _, s := range servers {
		for _, line := range strings.Split(s.Logs(), "\n") {
			if serverErrorLine.MatchString(line) {
				t.Errorf("server %s logged a server error: %.1000s", s.Addr, line)
			}
		}
	}
}

// tableSnapshot renders the rows of every table as text, for "nothing changed" comparisons.
// api_tokens.last_used_at is left out: a refused request may still have been authenticated.
func tableSnapshot(t *testing.T, e *env) string {
	t.Helper()
	tables := []string{"apps", "schemes", "channels", "releases", "debug_files", "debug_file_metadata",
		"storage_objects", "upload_idempotency", "password_failures"}
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	for _, table := range append(tables, "api_tokens") {
		sel := "SELECT * FROM " + pgx.Identifier{table}.Sanitize()
		if table == "api_tokens" {
			sel = "SELECT id, name, scope, token_hash, created_at, revoked_at FROM api_tokens"
		}
		var text string
		if err := e.db.QueryRow(ctx, `SELECT coalesce(json_agg(t ORDER BY t::text)::text, '[]') FROM (`+sel+`) t`).Scan(&text); err != nil {
			t.Fatalf("snapshot of %s: %v", table, err)
		}
		b.WriteString(table + ": " + text + "\n")
	}
	keys := []string{}
	for k := range listStorage(t, e.h) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteString("objects: " + strings.Join(keys, ",") + "\n")
	return b.String()
}

// waitQuiet waits until no upload is pending (their handlers have finished cleaning up).
func waitQuiet(t *testing.T, e *env) {
	t.Helper()
	testkit.Eventually(t, time.Minute, "no pending uploads", func() bool {
		return queryInt(t, e.db, `SELECT count(*) FROM storage_objects WHERE state = 'pending'`) == 0
	})
}
