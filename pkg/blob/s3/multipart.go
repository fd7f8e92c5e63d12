package s3

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/slipwayhq/slipway/pkg/blob"
)

// Multipart uploads driven by clients (resumable upload sessions): the service starts the upload,
// presigns one PUT per part, and completes it; the parts travel from the client straight to S3.

var (
	_ blob.Multipart     = (*Store)(nil)
	_ blob.PartPresigner = (*Store)(nil)
)

// CreateMultipart implements blob.Multipart.
func (s *Store) CreateMultipart(ctx context.Context, key, contentType string) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", err
	}
	out, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{
		Bucket: &s.bucket, Key: aws.String(s.prefix + key), ContentType: optional(contentType),
	}, writeOpts...)
	if err != nil {
		return "", fmt.Errorf("s3 storage: start upload of %q: %w", key, err)
	}
	return aws.ToString(out.UploadId), nil
}

// PresignPart implements blob.PartPresigner. The URL is signed for exactly size bytes
// (Content-Length is a signed header), so a part of another size is refused by S3 itself. The URL
// is a bearer secret: errors never contain it.
func (s *Store) PresignPart(ctx context.Context, key, uploadID string, number int, size int64, ttl time.Duration) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > maxPresignTTL {
		return "", fmt.Errorf("s3 storage: presign part of %q: lifetime %s is outside (0, 7 days]", key, ttl)
	}
	req, err := s.presign.PresignUploadPart(ctx, &awss3.UploadPartInput{
		Bucket: &s.bucket, Key: aws.String(s.prefix + key), UploadId: &uploadID,
		PartNumber: aws.Int32(int32(number)), ContentLength: aws.Int64(size),
	}, awss3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("s3 storage: presign part %d of %q: %w", number, key, err)
	}
	return req.URL, nil
}

// ListParts implements blob.Multipart.
func (s *Store) ListParts(ctx context.Context, key, uploadID string) ([]blob.Part, error) {
	if err := blob.CheckKey(key); err != nil {
		return nil, err
	}
	in := &awss3.ListPartsInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key), UploadId: &uploadID}
	var parts []blob.Part
	for {
		out, err := s.client.ListParts(ctx, in)
		if err != nil {
			return nil, uploadErr("list parts of", key, err)
		}
		for _, p := range out.Parts {
			parts = append(parts, blob.Part{Number: int(aws.ToInt32(p.PartNumber)), Size: aws.ToInt64(p.Size), ETag: aws.ToString(p.ETag)})
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.PartNumberMarker = out.NextPartNumberMarker
	}
	slices.SortFunc(parts, func(a, b blob.Part) int { return a.Number - b.Number })
	return parts, nil
}

// CompleteMultipart implements blob.Multipart.
func (s *Store) CompleteMultipart(ctx context.Context, key, uploadID string, parts []blob.Part) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	done := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		done[i] = types.CompletedPart{PartNumber: aws.Int32(int32(p.Number)), ETag: aws.String(p.ETag)}
	}
	_, err := s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: &s.bucket, Key: aws.String(s.prefix + key), UploadId: &uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
	}, writeOpts...)
	return uploadErr("complete upload of", key, err)
}

// AbortMultipart implements blob.Multipart. Aborting an upload that is gone is not an error.
func (s *Store) AbortMultipart(ctx context.Context, key, uploadID string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	_, err := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key), UploadId: &uploadID})
	if err = uploadErr("abort upload of", key, err); errors.Is(err, blob.ErrNotFound) {
		return nil
	}
	return err
}

// uploadErr maps "no such upload" to blob.ErrNotFound.
func uploadErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var nsu *types.NoSuchUpload
	if errors.As(err, &nsu) || status(err) == 404 {
		return fmt.Errorf("s3 storage: %s %q: %w", op, key, blob.ErrNotFound)
	}
	return fmt.Errorf("s3 storage: %s %q: %w", op, key, err)
}
