package main

import (
	"archive/zip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/jackc/pgx/v5"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// env is what every scenario shares: the package, the slipway binary, a fresh database, a fresh
// bucket, and a temp folder. close removes them all.
type env struct {
	opts    options
	tmp     string
	bin     string
	ipa     string
	pkg     packageInfo
	dbURL   string
	dbName  string
	adminDB string

	s3Endpoint, s3Region, s3Access, s3Secret string
	bucket                                   string
	s3                                       *awss3.Client
	minioPID                                 int

	pgVersion, minioVersion string
	cleanups                []func()
}

// packageInfo describes the benchmark .ipa for the report.
type packageInfo struct {
	Size            int64
	Entries         int
	CentralDirBytes int64
	// Offsets of the entries the parser reads, from the start of the archive.
	InfoPlistOffset, ProfileOffset, FirstIconOffset, LastIconEnd int64
	GenerateTook                                                 time.Duration
}

func newEnv(ctx context.Context, o options) (e *env, err error) {
	e = &env{opts: o}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.tmp, err = os.MkdirTemp(o.workDir, "slipway-bench-"); err != nil {
		return nil, err
	}
	e.cleanups = append(e.cleanups, func() { os.RemoveAll(e.tmp) })

	if err := e.buildBinary(ctx); err != nil {
		return nil, err
	}
	if err := e.generatePackage(); err != nil {
		return nil, err
	}
	if err := e.checkPostgres(ctx); err != nil {
		return nil, err
	}
	if err := e.createBucket(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// close undoes newEnv, most recent first.
func (e *env) close() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	e.cleanups = nil
}

// buildBinary builds slipway as the Dockerfile does (CGO off, -trimpath) but keeps symbols, so
// perf can name functions.
func (e *env) buildBinary(ctx context.Context) error {
	if e.opts.slipwayBin != "" {
		e.bin = e.opts.slipwayBin
		log.Printf("using the slipway binary %s", e.bin)
		return nil
	}
	e.bin = filepath.Join(e.tmp, "slipway")
	log.Printf("building slipway into %s", e.bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", e.bin, "./cmd/slipway")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building slipway: %w", err)
	}
	return nil
}

// generatePackage writes the benchmark .ipa once and records where its parsed entries landed.
func (e *env) generatePackage() error {
	e.ipa = filepath.Join(e.tmp, "Bench.ipa")
	size := e.opts.sizeMiB << 20
	log.Printf("generating a %d MiB .ipa (realistic layout) into %s", e.opts.sizeMiB, e.ipa)
	start := time.Now()
	f, err := os.Create(e.ipa)
	if err != nil {
		return err
	}
	_, err = appletest.WriteBenchIPA(f, appletest.BenchIPAOptions{
		Size: size,
		App:  appletest.IPAOptions{AppName: "Bench", BundleID: "com.example.bench", Version: "1.0.0", Build: "1"},
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("generating the package: %w", err)
	}
	e.pkg.GenerateTook = time.Since(start)
	return e.describePackage()
}

func (e *env) describePackage() error {
	zr, err := zip.OpenReader(e.ipa)
	if err != nil {
		return err
	}
	defer zr.Close()
	st, err := os.Stat(e.ipa)
	if err != nil {
		return err
	}
	e.pkg.Size, e.pkg.Entries = st.Size(), len(zr.File)
	e.pkg.FirstIconOffset = -1
	for _, f := range zr.File {
		off, err := f.DataOffset()
		if err != nil {
			return err
		}
		base := strings.TrimPrefix(f.Name, "Payload/Bench.app/")
		switch {
		case base == "Info.plist":
			e.pkg.InfoPlistOffset = off
		case base == "embedded.mobileprovision":
			e.pkg.ProfileOffset = off
		case strings.HasPrefix(base, "AppIcon") && !strings.Contains(base, "/"):
			if e.pkg.FirstIconOffset < 0 {
				e.pkg.FirstIconOffset = off
			}
			e.pkg.LastIconEnd = off + int64(f.CompressedSize64)
		}
	}
	// The end of central directory record (no comment): directory size at 12, offset at 16.
	raw, err := os.Open(e.ipa)
	if err != nil {
		return err
	}
	defer raw.Close()
	eocd := make([]byte, 22)
	if _, err := raw.ReadAt(eocd, st.Size()-22); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(eocd) != 0x06054b50 {
		return errors.New("the package's end record is not where expected")
	}
	e.pkg.CentralDirBytes = int64(binary.LittleEndian.Uint32(eocd[12:]))
	return nil
}

// checkPostgres connects to SLIPWAY_TEST_DATABASE_URL's server and notes its version.
func (e *env) checkPostgres(ctx context.Context) error {
	e.adminDB = os.Getenv("SLIPWAY_TEST_DATABASE_URL")
	if e.adminDB == "" {
		return errors.New("SLIPWAY_TEST_DATABASE_URL is not set: run through test/with-services.sh (make bench)")
	}
	conn, err := pgx.Connect(ctx, e.adminDB)
	if err != nil {
		return fmt.Errorf("connecting to Postgres: %w", err)
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, "SHOW server_version").Scan(&e.pgVersion)
}

// createDatabase creates a fresh database on SLIPWAY_TEST_DATABASE_URL's server (dropped at the
// end) for one backend's scenarios; serve migrates it.
func (e *env) createDatabase(ctx context.Context) error {
	base := e.adminDB
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("connecting to Postgres: %w", err)
	}
	defer conn.Close(ctx)
	name := "slipway_bench_" + testkit.RandomHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("creating the benchmark database: %w", err)
	}
	e.dbName = name
	e.cleanups = append(e.cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			log.Printf("dropping database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			log.Printf("dropping database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	u.Path = "/" + name
	e.dbURL = u.String()
	return nil
}

// createBucket creates a fresh bucket on the test MinIO (removed with its objects at the end).
func (e *env) createBucket(ctx context.Context) error {
	e.s3Endpoint = os.Getenv("SLIPWAY_TEST_S3_ENDPOINT")
	e.s3Access, e.s3Secret = os.Getenv("SLIPWAY_TEST_S3_ACCESS_KEY"), os.Getenv("SLIPWAY_TEST_S3_SECRET_KEY")
	e.s3Region = os.Getenv("SLIPWAY_TEST_S3_REGION")
	if e.s3Region == "" {
		e.s3Region = "us-east-1"
	}
	if e.s3Endpoint == "" {
		return errors.New("SLIPWAY_TEST_S3_ENDPOINT is not set: run through test/with-services.sh (make bench)")
	}
	if u, err := url.Parse(e.s3Endpoint); err != nil || !isLoopback(u.Hostname()) {
		return fmt.Errorf("SLIPWAY_TEST_S3_ENDPOINT must be a loopback URL for this benchmark, got %q", e.s3Endpoint)
	}
	fmt.Sscan(os.Getenv("SLIPWAY_TEST_MINIO_PID"), &e.minioPID)
	e.minioVersion = "unknown"
	if b := os.Getenv("SLIPWAY_TEST_MINIO_BIN"); b != "" {
		e.minioVersion = strings.TrimPrefix(filepath.Base(b), "minio-")
	}
	e.s3 = awss3.NewFromConfig(aws.Config{
		Region:                     e.s3Region,
		Credentials:                credentials.NewStaticCredentialsProvider(e.s3Access, e.s3Secret, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(e.s3Endpoint)
		o.UsePathStyle = true
	})
	e.bucket = "slipway-bench-" + testkit.RandomHex(6)
	if _, err := e.s3.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &e.bucket}); err != nil {
		return fmt.Errorf("creating bucket %s: %w", e.bucket, err)
	}
	e.cleanups = append(e.cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.removeBucket(ctx); err != nil {
			log.Printf("removing bucket %s: %v", e.bucket, err)
		}
	})
	return nil
}

// emptyBucket deletes every object and unfinished upload under prefix ("" for all).
func (e *env) emptyBucket(ctx context.Context, prefix string) error {
	uploads, err := e.s3.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &e.bucket, Prefix: &prefix})
	if err != nil {
		return err
	}
	for _, u := range uploads.Uploads {
		if _, err := e.s3.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &e.bucket, Key: u.Key, UploadId: u.UploadId}); err != nil {
			return err
		}
	}
	pages := awss3.NewListObjectsV2Paginator(e.s3, &awss3.ListObjectsV2Input{Bucket: &e.bucket, Prefix: &prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, 0, len(page.Contents))
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		if _, err := e.s3.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: &e.bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}}); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) removeBucket(ctx context.Context) error {
	if err := e.emptyBucket(ctx, ""); err != nil {
		return err
	}
	_, err := e.s3.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: &e.bucket})
	return err
}

// s3StorageURL is the bucket's SLIPWAY_STORAGE_URL (credentials come from AWS_* variables).
func (e *env) s3StorageURL() string {
	q := url.Values{"region": {e.s3Region}, "endpoint": {e.s3Endpoint}, "path_style": {"true"}}
	return "s3://" + e.bucket + "?" + q.Encode()
}

func isLoopback(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}
