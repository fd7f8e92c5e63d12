// Package distribution holds Slipway's use cases (uploading a build, destroying an app, uploading
// a debug file, collecting orphaned objects), with no HTTP in them. It ties the database (the
// truth) to object storage (which follows it): objects are recorded as pending before they are
// written and as deleted in the transaction that drops the rows owning them, so nothing is
// orphaned for long whatever fails.
package distribution

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/signing"
	"github.com/slipwayhq/slipway/pkg/storage"
)

// Service runs the use cases against one database and one object store. It is the one door the
// HTTP handlers and pages use to reach data.
type Service struct {
	Store   Store
	Storage storage.Backend
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// Signer signs password cookies and access tokens for protected channels.
	Signer *signing.Signer
	// MaxUploadBytes caps an upload's file part.
	MaxUploadBytes int64
	// Downloads says where clients fetch objects from (see ObjectURL).
	Downloads DownloadConfig
	// Sessions shapes resumable upload sessions (sessions.go).
	Sessions SessionConfig
	// Links builds the URLs events carry.
	Links links.Links
	// Webhooks shapes webhook delivery (webhooks.go).
	Webhooks WebhookConfig
	// Retention holds the replica's default retention rules (retention.go).
	Retention RetentionConfig
	// UDID shapes the UDID profile service (udid.go).
	UDID UDIDConfig

	wakeOnce    sync.Once
	webhookWake chan struct{}
	webhookOnce sync.Once
	webhookHTTP *http.Client
	// downloads counts downloads between flushes (counts.go).
	counterOnce sync.Once
	downloads   *downloadCounter

	// reads is the read cache (readcache.go), nil when off.
	reads *readCache
}

// storageErr wraps a failed storage operation as Unavailable (503 with Retry-After): whatever the
// cause, the client can only retry, and the message must not carry keys or URLs.
func (s *Service) storageErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if s.Metrics != nil {
		s.Metrics.StorageErrors.WithLabelValues(op).Inc()
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return errs.Wrap(errs.Unavailable, err, "object storage is unavailable; retry later")
}

// DestroyApp deletes an app with everything in it. The rows go in one transaction which records
// their objects as deleted; the objects are deleted after the commit, and any that fail stay
// recorded for the collector.
func (s *Service) DestroyApp(ctx context.Context, id int64) error {
	defer s.changed(Change{AppID: id})
	return s.deleted(ctx)(s.Store.DestroyApp(ctx, id))
}

// deleted returns a function that takes what a store deletion returned (the keys of the objects
// it recorded as deleted, or an error) and deletes those objects after the commit.
func (s *Service) deleted(ctx context.Context) func(keys []string, err error) error {
	return func(keys []string, err error) error {
		if err != nil {
			return err
		}
		s.deleteObjects(context.WithoutCancel(ctx), keys)
		return nil
	}
}

// deleteObjects deletes objects already recorded as deleted, a few at a time, and forgets each
// one deleted. Failures are logged and left to the collector.
func (s *Service) deleteObjects(ctx context.Context, keys []string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func(key string) {
			defer func() { <-sem; wg.Done() }()
			if err := s.Storage.Delete(ctx, key); err != nil {
				s.storageErr("delete", err)
				s.Log.WarnContext(ctx, "object deletion failed; the collector will retry", slog.String("error", err.Error()))
				return
			}
			if err := s.Store.Forget(ctx, key); err != nil {
				s.Log.WarnContext(ctx, "forgetting a deleted object failed", slog.String("error", err.Error()))
			}
		}(k)
	}
	wg.Wait()
}

// GCResult counts what one collector run did.
type GCResult struct {
	Deleted int
	Failed  int
}

// CollectGarbage deletes objects recorded as deleted, and pending ones older than grace (uploads
// whose process died), in batches until none is left or only failing ones remain.
func (s *Service) CollectGarbage(ctx context.Context, grace time.Duration) (GCResult, error) {
	var res GCResult
	// Sessions past their expiry end first, so their objects are collected in this run.
	if n, err := s.Store.ExpireSessions(ctx); err != nil {
		return res, err
	} else if n > 0 {
		s.Log.InfoContext(ctx, "collector: upload sessions expired", slog.Int("sessions", n))
	}
	const batch = 100
	// seen holds keys tried in this run: failed ones, and ones another collector holds.
	seen := map[string]bool{}
	for {
		keys, err := s.Store.Collectable(ctx, grace, batch+len(seen))
		if err != nil {
			return res, err
		}
		progressed := false
		for _, k := range keys {
			if seen[k] {
				continue
			}
			seen[k], progressed = true, true
			ok, err := s.Store.Collect(ctx, k, grace, s.Storage.Delete)
			switch {
			case err != nil:
				res.Failed++
				if s.Metrics != nil {
					s.Metrics.GCFailed.Inc()
				}
				s.Log.WarnContext(ctx, "collector: deletion failed", slog.String("error", err.Error()))
			case ok:
				res.Deleted++
				if s.Metrics != nil {
					s.Metrics.GCDeleted.Inc()
				}
			}
		}
		if !progressed || ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
}
