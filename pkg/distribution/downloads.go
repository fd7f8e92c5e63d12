package distribution

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/storage"
)

// DownloadConfig says where clients fetch objects from.
type DownloadConfig struct {
	// PublicURL is the base of the service's own signed object URLs (filesystem storage).
	PublicURL string
	// CDNURL, when set, is the base every object URL is made from instead.
	CDNURL string
	// TTL bounds presigned and signed URLs.
	TTL time.Duration
}

// ObjectURL returns where a client fetches an object: the CDN, a presigned S3 URL, or the
// service's own signed, expiring URL (filesystem storage). The handler redirects to it. The URL
// is a credential: it is never logged.
func (s *Service) ObjectURL(ctx context.Context, key, filename, contentType string) (string, error) {
	d := s.Downloads
	if d.CDNURL != "" {
		return d.CDNURL + "/" + escapeKey(key), nil
	}
	switch b := s.Storage.(type) {
	case storage.Presigner:
		u, err := b.PresignGet(ctx, key, d.TTL, storage.GetOptions{Filename: filename, ContentType: contentType})
		if err != nil {
			return "", s.storageErr("presign", err)
		}
		return u, nil
	case storage.FileOpener:
		q := url.Values{"name": {filename}, "type": {contentType}}
		q.Set("t", s.Signer.Token("object", d.TTL, key, filename, contentType))
		return d.PublicURL + "/objects/" + escapeKey(key) + "?" + q.Encode(), nil
	}
	return "", fmt.Errorf("storage backend %T can neither presign nor serve files", s.Storage)
}

// OpenSignedObject opens an object of the filesystem backend for a URL made by ObjectURL, after
// checking its signature: errs.Forbidden for a bad or expired one, errs.NotFound when the object
// is gone.
func (s *Service) OpenSignedObject(ctx context.Context, key, filename, contentType, signature string) (*os.File, error) {
	fo, ok := s.Storage.(storage.FileOpener)
	if !ok || !s.Signer.CheckToken(signature, "object", key, filename, contentType) {
		return nil, errs.New(errs.Forbidden, "this download link is invalid or has expired; open the release page again")
	}
	f, err := fo.OpenFile(ctx, key)
	if err != nil {
		// A key that is not a valid object (it climbs out of the folder, or a link planted there
		// leads out) can carry a valid signature only if the secret leaked: it is not found either.
		if errs.KindOf(err) == errs.Internal && (errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrInvalidKey)) {
			return nil, errs.New(errs.NotFound, "the file no longer exists")
		}
		return nil, err
	}
	return f, nil
}

func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// DatabaseReady reports whether the database answers (Zealot's /api/health).
func (s *Service) DatabaseReady(ctx context.Context) error { return s.Store.Ping(ctx) }

// ReadinessCheck reports whether the database and object storage answer, each on its own.
func (s *Service) ReadinessCheck(ctx context.Context) (databaseErr, storageErr error) {
	return s.Store.Ping(ctx), s.Storage.Ping(ctx)
}
