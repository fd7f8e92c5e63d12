package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Env is a fresh, empty bucket on the test S3 server (MinIO started by test/with-services.sh).
type S3Env struct {
	Endpoint  string // e.g. http://127.0.0.1:41234
	Region    string
	AccessKey string
	SecretKey string
	Bucket    string
	// URL is the storage URL of the bucket for backends.Open / SLIPWAY_STORAGE_URL:
	// s3://BUCKET?region=R&endpoint=E&path_style=true. It holds no credentials: pass AccessKey and
	// SecretKey with backends.WithS3Credentials, or Environ to a child process.
	URL string
}

// S3 creates a bucket with a random name for the test and removes it, with everything in it and
// any unfinished multipart upload, when the test ends. Without SLIPWAY_TEST_S3_ENDPOINT the test
// is skipped, or fails under SLIPWAY_TEST_REQUIRE_SERVICES=1 (make test).
func S3(tb testing.TB) S3Env {
	tb.Helper()
	e := S3Env{
		Endpoint:  os.Getenv("SLIPWAY_TEST_S3_ENDPOINT"),
		Region:    os.Getenv("SLIPWAY_TEST_S3_REGION"),
		AccessKey: os.Getenv("SLIPWAY_TEST_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("SLIPWAY_TEST_S3_SECRET_KEY"),
		Bucket:    "slipway-test-" + bucketSuffix(),
	}
	if e.Endpoint == "" {
		msg := "SLIPWAY_TEST_S3_ENDPOINT is not set: run `make test` (test/with-services.sh), which starts " +
			"MinIO for the tests (testcontainers-go would need a Docker engine, and this machine has none)"
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	if e.Region == "" {
		e.Region = "us-east-1"
	}
	q := url.Values{"region": {e.Region}, "endpoint": {e.Endpoint}, "path_style": {"true"}}
	e.URL = "s3://" + e.Bucket + "?" + q.Encode()

	client := e.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &e.Bucket}); err != nil {
		tb.Fatalf("creating test bucket %s at %s: %v", e.Bucket, e.Endpoint, err)
	}
	tb.Cleanup(func() {
		// The test's own context is already cancelled when clean-ups run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.removeBucket(ctx, client); err != nil {
			tb.Errorf("removing test bucket %s: %v", e.Bucket, err)
		}
	})
	return e
}

// Client returns an SDK client for the server, with the test credentials and path-style
// addressing, for tests that look behind a backend (e.g. ListMultipartUploads).
func (e S3Env) Client() *awss3.Client {
	cfg := aws.Config{
		Region:                     e.Region,
		Credentials:                credentials.NewStaticCredentialsProvider(e.AccessKey, e.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	return awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(e.Endpoint)
		o.UsePathStyle = true
	})
}

// Environ returns the AWS_* variables that give a child process (the slipway binary under test)
// the test credentials through the default chain; append them to os.Environ().
func (e S3Env) Environ() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + e.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + e.SecretKey,
		"AWS_REGION=" + e.Region,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// bucketSuffix returns 16 random hex digits (bucket names are lowercase). It is kept apart from
// postgres.go's helpers so this file builds on its own.
func bucketSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// removeBucket aborts unfinished uploads, deletes every object and then the bucket.
func (e S3Env) removeBucket(ctx context.Context, c *awss3.Client) error {
	uploads, err := c.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &e.Bucket})
	if err != nil {
		return err
	}
	for _, u := range uploads.Uploads {
		if _, err := c.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{
			Bucket: &e.Bucket, Key: u.Key, UploadId: u.UploadId,
		}); err != nil {
			return err
		}
	}
	pages := awss3.NewListObjectsV2Paginator(c, &awss3.ListObjectsV2Input{Bucket: &e.Bucket})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if _, err := c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &e.Bucket, Key: o.Key}); err != nil {
				return err
			}
		}
	}
	_, err = c.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: &e.Bucket})
	return err
}
